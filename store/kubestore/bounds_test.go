package kubestore_test

import (
	"errors"
	"math"
	"strconv"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

// A Lease outside the bounds of store.ValidateStored (a token annotation of
// 2^64-1 that an older version accepted, a spec edited with kubectl) is
// corrupt: Get, CompareAndSwap and Watch report it, and no swap writes it,
// whatever revision it names or token it proposes.
func TestOutOfBoundsLease(t *testing.T) {
	e := newEnv(t, "bounds")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	leases := e.client.CoordinationV1().Leases(e.ns)
	week := int32(lease.MaxDuration.Seconds())
	for _, tc := range []struct {
		label string
		spoil func(l *coordinationv1.Lease)
	}{
		{"token 2^64-1", func(l *coordinationv1.Lease) {
			l.Annotations[kubestore.AnnotationToken] = strconv.FormatUint(math.MaxUint64, 10)
		}},
		{"token lease.MaxToken+1", func(l *coordinationv1.Lease) {
			l.Annotations[kubestore.AnnotationToken] = strconv.FormatUint(lease.MaxToken+1, 10)
		}},
		{"transitions 2^64-1", func(l *coordinationv1.Lease) {
			l.Annotations[kubestore.AnnotationTransitions] = strconv.FormatUint(math.MaxUint64, 10)
		}},
		{"a lease longer than lease.MaxDuration", func(l *coordinationv1.Lease) {
			d := week + 1
			l.Spec.LeaseDurationSeconds = &d
		}},
		{"held with no lease duration", func(l *coordinationv1.Lease) {
			l.Spec.LeaseDurationSeconds = nil
		}},
		{"a holder with an escape sequence", func(l *coordinationv1.Lease) {
			h := "pod-a\x1b[2J"
			l.Spec.HolderIdentity = &h
			l.Annotations[kubestore.AnnotationHolder] = h
		}},
	} {
		t.Run(tc.label, func(t *testing.T) {
			name := "bounds-" + randomSuffix(t)
			held, _, err := st.CompareAndSwap(c, name, 0, record("pod-a", 1))
			if err != nil {
				t.Fatal(err)
			}
			l, err := leases.Get(c, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.spoil(l)
			if l, err = leases.Update(c, l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			rev := parseRV(t, l.ResourceVersion)
			if _, _, err := st.Get(c, name); !errors.Is(err, store.ErrCorruptRecord) {
				t.Fatalf("Get: %v, want ErrCorruptRecord", err)
			}
			ch, err := st.Watch(c, name)
			if err != nil {
				t.Fatal(err)
			}
			if ev := recv(t, ch); !errors.Is(ev.Err, store.ErrCorruptRecord) {
				t.Errorf("watch event %+v, want ErrCorruptRecord", ev)
			}
			highest := uint64(math.MaxUint64)
			for _, expected := range []lease.Revision{0, rev, rev - 1} {
				for _, next := range []lease.Record[meta]{held, record("pod-b", highest+1), record("pod-b", held.Token+1)} {
					if _, _, err := st.CompareAndSwap(c, name, expected, next); !errors.Is(err, store.ErrCorruptRecord) {
						t.Errorf("CompareAndSwap from %d of %s with token %d: %v, want ErrCorruptRecord", expected, next.Holder, next.Token, err)
					}
				}
			}
			after, err := leases.Get(c, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != l.ResourceVersion {
				t.Fatalf("the Lease was written: resourceVersion %s, was %s", after.ResourceVersion, l.ResourceVersion)
			}
		})
	}
}

// At lease.MaxToken a new term is ErrTokenExhausted whatever token it
// proposes, also over a Lease client-go took over while its token
// annotation stayed; renewals of the last term go on.
func TestTokenExhaustedLease(t *testing.T) {
	e := newEnv(t, "exhausted")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	leases := e.client.CoordinationV1().Leases(e.ns)
	top, rev, err := st.CompareAndSwap(c, "job", 0, record("pod-a", lease.MaxToken))
	if err != nil || top.Token != lease.MaxToken {
		t.Fatalf("create with lease.MaxToken: token %d, %v", top.Token, err)
	}
	highest := uint64(math.MaxUint64)
	for _, next := range []lease.Record[meta]{record("pod-b", highest+1), record("pod-b", 1), record("pod-b", lease.MaxToken), record("pod-a", 3)} {
		if _, _, err := st.CompareAndSwap(c, "job", rev, next); !errors.Is(err, store.ErrTokenExhausted) {
			t.Errorf("new term of %s proposing %d: %v, want ErrTokenExhausted", next.Holder, next.Token, err)
		}
	}
	if _, got, err := st.Get(c, "job"); err != nil || got != rev {
		t.Fatalf("Get after the refused terms: revision %d, %v; want %d", got, err, rev)
	}
	renewed, _, err := st.CompareAndSwap(c, "job", rev, top)
	if err != nil || renewed.Token != lease.MaxToken {
		t.Fatalf("renewal at lease.MaxToken: token %d, %v", renewed.Token, err)
	}

	// client-go takes the Lease over, keeping the token annotation.
	l, err := leases.Get(c, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := "client-go-1"
	l.Spec.HolderIdentity = &h
	if l, err = leases.Update(c, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec, _, err := st.Get(c, "job"); err != nil || rec.Holder != h || rec.Token != 0 {
		t.Fatalf("Get of client-go's Lease = %+v, %v", rec, err)
	}
	if _, _, err := st.CompareAndSwap(c, "job", parseRV(t, l.ResourceVersion), record("pod-b", 1)); !errors.Is(err, store.ErrTokenExhausted) {
		t.Errorf("new term over client-go's Lease with the token annotation at lease.MaxToken: %v, want ErrTokenExhausted", err)
	}
}
