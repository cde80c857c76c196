package kubestore_test

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

// A Lease whose annotations cannot be read is reported, never overwritten.
func TestCorruptLeaseNeverOverwritten(t *testing.T) {
	e := newEnv(t, "corrupt")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	leases := e.client.CoordinationV1().Leases(e.ns)
	for _, tc := range []struct {
		label      string
		annotation string
		value      string
	}{
		{"a token that is no number", kubestore.AnnotationToken, "seven"},
		{"metadata that is no JSON", kubestore.AnnotationMetadata, "{"},
		{"metadata of the wrong type", kubestore.AnnotationMetadata, `{"pod":42}`},
		{"a lease duration that is no duration", kubestore.AnnotationLeaseDuration, "soon"},
	} {
		t.Run(tc.annotation+"="+tc.value, func(t *testing.T) {
			name := "corrupt-" + randomSuffix(t)
			if _, _, err := st.CompareAndSwap(c, name, 0, record("pod-a", 1)); err != nil {
				t.Fatal(err)
			}
			l, err := leases.Get(c, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.Annotations[tc.annotation] = tc.value
			if l, err = leases.Update(c, l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.Get(c, name); !errors.Is(err, store.ErrCorruptRecord) {
				t.Fatalf("Get of a Lease with %s: %v, want ErrCorruptRecord", tc.label, err)
			}
			ch, err := st.Watch(c, name)
			if err != nil {
				t.Fatal(err)
			}
			ev := recv(t, ch)
			rev := parseRV(t, l.ResourceVersion)
			if !errors.Is(ev.Err, store.ErrCorruptRecord) || ev.Revision != rev {
				t.Fatalf("watch event %+v, want ErrCorruptRecord at revision %d", ev, rev)
			}
			// Even a swap that names the corrupt revision writes nothing.
			for _, expected := range []lease.Revision{0, rev, rev - 1} {
				_, _, err := st.CompareAndSwap(c, name, expected, record("pod-b", 2))
				if !errors.Is(err, store.ErrCorruptRecord) {
					t.Errorf("CompareAndSwap from %d: %v, want ErrCorruptRecord", expected, err)
				}
			}
			after, err := leases.Get(c, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != l.ResourceVersion {
				t.Fatalf("the corrupt Lease was written: resourceVersion %s, was %s", after.ResourceVersion, l.ResourceVersion)
			}
		})
	}
}

// A Lease written by client-go's leaderelection reads with its holder and
// timing, token 0 and no metadata. Taking it over after a term of Tenure's
// gets a token above that term's.
func TestForeignLease(t *testing.T) {
	e := newEnv(t, "foreign")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	lock := func(name, id string) *resourcelock.LeaseLock {
		return &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Client:     e.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
	}
	now := metav1.NewTime(time.Now())

	// Created by client-go.
	if err := lock("plain", "cg-1").Create(c, resourcelock.LeaderElectionRecord{
		HolderIdentity: "cg-1", LeaseDurationSeconds: 4, AcquireTime: now, RenewTime: now, LeaderTransitions: 2,
	}); err != nil {
		t.Fatal(err)
	}
	rec, _, err := st.Get(c, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Holder != "cg-1" || rec.Token != 0 || rec.LeaseDuration != 4*time.Second || rec.Transitions != 2 ||
		!rec.RenewedAt.Equal(now.Time.Truncate(time.Microsecond)) || rec.Metadata != (meta{}) {
		t.Fatalf("a client-go Lease reads %+v", rec)
	}

	// Held by Tenure with a token above the wall clock (so that the clock
	// floor does not hide the annotation's), then taken over by client-go,
	// which keeps the annotations.
	const last = 1 << 52
	if _, _, err := st.CompareAndSwap(c, "taken", 0, record("pod-a", last)); err != nil {
		t.Fatal(err)
	}
	l := lock("taken", "cg-2")
	if _, _, err := l.Get(c); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(c, resourcelock.LeaderElectionRecord{
		HolderIdentity: "cg-2", LeaseDurationSeconds: 3, AcquireTime: now, RenewTime: now, LeaderTransitions: 2,
	}); err != nil {
		t.Fatal(err)
	}
	rec, rev, err := st.Get(c, "taken")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Holder != "cg-2" || rec.Token != 0 || rec.LeaseDuration != 3*time.Second || rec.Metadata != (meta{}) {
		t.Fatalf("a Lease client-go took over reads %+v", rec)
	}
	// Tenure takes it back (as after its expiry) proposing token 1: the
	// store raises it above the token of Tenure's last term.
	got, _, err := st.CompareAndSwap(c, "taken", rev, record("pod-b", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got.Token <= last || got.Holder != "pod-b" {
		t.Fatalf("took over: %+v, want a token above %d", got, last)
	}
}

// Tokens keep growing when someone deletes a Lease and a Store re-creates
// it: a Store that saw it goes above what it saw, and one that never saw
// it goes above the wall clock, which is above every earlier token.
func TestDeletedLease(t *testing.T) {
	e := newEnv(t, "deleted")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	first, rev, err := st.CompareAndSwap(c, "job", 0, record("pod-a", 9))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := st.Watch(c, "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, ch); ev.Revision != rev {
		t.Fatalf("first event %+v, want revision %d", ev, rev)
	}
	if err := e.client.CoordinationV1().Leases(e.ns).Delete(c, "job", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, ch); !ev.Absent {
		t.Fatalf("after the delete: %+v, want Absent", ev)
	}
	if _, _, err := st.CompareAndSwap(c, "job", rev, record("pod-a", 10)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("renewal of a deleted Lease: %v, want a conflict", err)
	}
	again, rev2, err := st.CompareAndSwap(c, "job", 0, record("pod-b", 1))
	if err != nil {
		t.Fatal(err)
	}
	if again.Token <= first.Token || rev2 <= rev {
		t.Fatalf("re-created with token %d revision %d after token %d revision %d", again.Token, rev2, first.Token, rev)
	}
	if ev := recv(t, ch); ev.Revision != rev2 || ev.Record.Token != again.Token {
		t.Fatalf("after the re-create: %+v, want revision %d", ev, rev2)
	}

	// A Store that never saw the Lease: the clock floors the token.
	if err := e.client.CoordinationV1().Leases(e.ns).Delete(c, "job", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := newStore[meta](t, e.client, e.ns)
	got, _, err := fresh.CompareAndSwap(c, "job", 0, record("pod-c", 1))
	if err != nil {
		t.Fatal(err)
	}
	if got.Token <= again.Token {
		t.Fatalf("a fresh Store re-created the Lease with token %d, not above the %d before", got.Token, again.Token)
	}
}

// A swap's conflict carries the current record, also when the Lease was
// written by someone else at a revision the Store never saw.
func TestConflictReportsCurrent(t *testing.T) {
	e := newEnv(t, "conflict")
	a := newStore[meta](t, e.client, e.ns)
	b := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	held, rev, err := a.CompareAndSwap(c, "job", 0, record("pod-a", 1))
	if err != nil {
		t.Fatal(err)
	}
	renewed := held
	renewed.RenewedAt = time.Now()
	// b never saw rev: it reads the Lease, then writes.
	renewed, rev2, err := b.CompareAndSwap(c, "job", rev, renewed)
	if err != nil {
		t.Fatal(err)
	}
	got, gotRev, err := a.CompareAndSwap(c, "job", rev, record("pod-a", 2))
	if !errors.Is(err, store.ErrConflict) || gotRev != rev2 || got.Holder != "pod-a" || !got.RenewedAt.Equal(renewed.RenewedAt) {
		t.Fatalf("stale swap: %+v at %d, %v; want a conflict with revision %d", got, gotRev, err, rev2)
	}
}

// Writing the very record that is stored still makes a new revision (the
// API server skips unchanged objects): followers count a lease's life from
// its revision.
func TestIdenticalWriteNewRevision(t *testing.T) {
	e := newEnv(t, "identical")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	rec, rev, err := st.CompareAndSwap(c, "job", 0, record("pod-a", 1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		got, next, err := st.CompareAndSwap(c, "job", rev, rec)
		if err != nil {
			t.Fatal(err)
		}
		if next <= rev || got.Token != rec.Token || !got.RenewedAt.Equal(rec.RenewedAt) {
			t.Fatalf("write %d of the same record: revision %d after %d, %+v", i, next, rev, got)
		}
		rev = next
	}
}

// A claim is marked by its annotation, holding its token: the claim reads
// back as one, the write that takes it over removes the annotation, and an
// annotation of another token (left by a writer that did not know it) or
// on a Lease client-go wrote last means no claim.
func TestClaimAnnotation(t *testing.T) {
	e := newEnv(t, "claim")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	leases := e.client.CoordinationV1().Leases(e.ns)
	claim := record("pod-a", 1)
	claim.Claim = true
	got, _, err := st.CompareAndSwap(c, "job", 0, claim)
	if err != nil || !got.Claim {
		t.Fatalf("create of a claim = %+v, %v; want Claim", got, err)
	}
	if rec, _, err := st.Get(c, "job"); err != nil || !rec.Claim {
		t.Fatalf("Get of a claim = %+v, %v; want Claim", rec, err)
	}
	l, err := leases.Get(c, "job", metav1.GetOptions{})
	if err != nil || l.Annotations[kubestore.AnnotationClaim] != l.Annotations[kubestore.AnnotationToken] {
		t.Fatalf("annotations %v, %v; want %s to hold the token", l.Annotations, err, kubestore.AnnotationClaim)
	}
	l.Annotations[kubestore.AnnotationClaim] = "12"
	if _, err := leases.Update(c, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec, _, err := st.Get(c, "job"); err != nil || rec.Claim {
		t.Fatalf("Get with the annotation of another token = %+v, %v; want no Claim", rec, err)
	}
	rec, rev, err := st.Get(c, "job")
	if err != nil {
		t.Fatal(err)
	}
	term := rec
	term.Token++
	if got, _, err = st.CompareAndSwap(c, "job", rev, term); err != nil || got.Claim {
		t.Fatalf("takeover = %+v, %v; want no Claim", got, err)
	}
	if l, err = leases.Get(c, "job", metav1.GetOptions{}); err != nil || l.Annotations[kubestore.AnnotationClaim] != "" {
		t.Fatalf("annotations after the takeover %v, %v; want no %s", l.Annotations, err, kubestore.AnnotationClaim)
	}
}
