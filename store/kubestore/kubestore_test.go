package kubestore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
)

// unreachable is a clientset of a server that does not exist: checks that
// must refuse before any request use it.
func unreachable(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewRefuses(t *testing.T) {
	c := unreachable(t).CoordinationV1()
	for _, tc := range []struct {
		label  string
		client coordinationclient.LeasesGetter
		ns     string
	}{
		{"a nil client", nil, "default"},
		{"an empty namespace", c, ""},
		{"a namespace with capitals", c, "Default"},
		{"a namespace with a dot", c, "a.b"},
	} {
		if st, err := kubestore.New[meta](tc.client, tc.ns); err == nil {
			t.Errorf("New with %s = %v, want an error", tc.label, st)
		}
	}
	if _, err := kubestore.New[meta](c, "default"); err != nil {
		t.Fatalf("New: %v", err)
	}
}

// Names that are no Lease names are refused before any request.
func TestNamesMustBeLeaseNames(t *testing.T) {
	st := newStore[meta](t, unreachable(t), "default")
	c := context.Background()
	for _, name := range []string{"Upper", "under_score", "-dash", "dash-", "sp ace", "ünï", "a..b", strings.Repeat("a", 254)} {
		if _, _, err := st.Get(c, name); !errors.Is(err, store.ErrInvalidName) {
			t.Errorf("Get(%q): %v, want ErrInvalidName", name, err)
		}
		if _, _, err := st.CompareAndSwap(c, name, 0, record("a", 1)); !errors.Is(err, store.ErrInvalidName) {
			t.Errorf("CompareAndSwap(%q): %v, want ErrInvalidName", name, err)
		}
		if _, err := st.Watch(c, name); !errors.Is(err, store.ErrInvalidName) {
			t.Errorf("Watch(%q): %v, want ErrInvalidName", name, err)
		}
	}
	for _, name := range []string{"a", "job-1", "billing.cron.example", strings.Repeat("a", 253)} {
		if err := kubestore.ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q): %v", name, err)
		}
	}
}

// Durations a Lease cannot carry are refused before any request.
func TestLeaseDurationLimits(t *testing.T) {
	st := newStore[meta](t, unreachable(t), "default")
	for _, d := range []time.Duration{time.Nanosecond, 500 * time.Millisecond, time.Second - 1, kubestore.MaxLeaseDuration + time.Second} {
		r := record("a", 1)
		r.LeaseDuration = d
		_, _, err := st.CompareAndSwap(context.Background(), "job", 0, r)
		if !errors.Is(err, store.ErrInvalidRecord) {
			t.Errorf("LeaseDuration %v: %v, want ErrInvalidRecord", d, err)
		}
	}
}

// record returns a record held by holder with token.
func record(holder string, token uint64) lease.Record[meta] {
	now := time.Now()
	return lease.Record[meta]{
		Holder: holder, Token: token, AcquiredAt: now, RenewedAt: now,
		LeaseDuration: 2 * time.Second, Transitions: 1, Metadata: meta{Pod: holder + "-pod"},
	}
}

// A Lease written by Tenure reads naturally as a Lease: in its spec, for
// kubectl, and for client-go's leaderelection. Labels and annotations that
// others add are kept.
func TestLeaseLayout(t *testing.T) {
	e := newEnv(t, "layout")
	st := newStore[meta](t, e.client, e.ns)
	c := ctx(t)
	// A token above the wall clock in microseconds, which the store keeps.
	r := record("pod-a", 1<<52+7)
	r.LeaseDuration = 1500 * time.Millisecond
	r.Transitions = 3
	got, rev, err := st.CompareAndSwap(c, "job", 0, r)
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.client.CoordinationV1().Leases(e.ns).Get(c, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.ResourceVersion != strconv.FormatUint(uint64(rev), 10) {
		t.Fatalf("revision %d, resourceVersion %q: the revision is the resourceVersion", rev, l.ResourceVersion)
	}
	s := l.Spec
	if *s.HolderIdentity != "pod-a" || *s.LeaseDurationSeconds != 2 || *s.LeaseTransitions != 3 ||
		!s.AcquireTime.Time.Equal(r.AcquiredAt.Truncate(time.Microsecond)) || !s.RenewTime.Time.Equal(r.RenewedAt.Truncate(time.Microsecond)) {
		t.Errorf("spec = %+v", s)
	}
	want := map[string]string{
		kubestore.AnnotationToken:         "4503599627370503",
		kubestore.AnnotationHolder:        "pod-a",
		kubestore.AnnotationMetadata:      `{"pod":"pod-a-pod"}`,
		kubestore.AnnotationLeaseDuration: "1.5s",
	}
	for k, v := range want {
		if l.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, l.Annotations[k], v)
		}
	}
	if _, ok := l.Annotations[kubestore.AnnotationTransitions]; ok {
		t.Errorf("annotation %s set for Transitions 3", kubestore.AnnotationTransitions)
	}
	if m := l.ManagedFields; len(m) == 0 || m[0].Manager != kubestore.FieldManager {
		t.Errorf("managedFields = %+v, want manager %q", m, kubestore.FieldManager)
	}

	// client-go's leaderelection reads the same Lease.
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "job"}, Client: e.client.CoordinationV1()}
	ler, _, err := lock.Get(c)
	if err != nil {
		t.Fatal(err)
	}
	if ler.HolderIdentity != "pod-a" || ler.LeaseDurationSeconds != 2 || ler.LeaderTransitions != 3 {
		t.Errorf("client-go reads %+v", ler)
	}

	// Someone else labels and annotates the Lease; a renewal keeps both.
	l.Labels = map[string]string{"app": "billing"}
	l.Annotations["example.com/note"] = "keep me"
	l, err = e.client.CoordinationV1().Leases(e.ns).Update(c, l, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewal := got
	renewal.RenewedAt = time.Now()
	renewal.LeaseDuration = 2 * time.Second
	// The Store has not seen the labelled Lease: it reads it before the PUT.
	_, _, err = st.CompareAndSwap(c, "job", rev, renewal)
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("renewal from the revision before the label: %v, want a conflict", err)
	}
	cur, curRev, err := st.Get(c, "job")
	if err != nil {
		t.Fatal(err)
	}
	if strconv.FormatUint(uint64(curRev), 10) != l.ResourceVersion {
		t.Fatalf("revision %d, resourceVersion %s", curRev, l.ResourceVersion)
	}
	renewal = cur
	renewal.RenewedAt = time.Now()
	renewal.LeaseDuration = 2 * time.Second
	if _, _, err := st.CompareAndSwap(c, "job", curRev, renewal); err != nil {
		t.Fatal(err)
	}
	l, err = e.client.CoordinationV1().Leases(e.ns).Get(c, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels["app"] != "billing" || l.Annotations["example.com/note"] != "keep me" {
		t.Errorf("labels %v, annotations %v: the ones others wrote are gone", l.Labels, l.Annotations)
	}
	if _, ok := l.Annotations[kubestore.AnnotationLeaseDuration]; ok || *l.Spec.LeaseDurationSeconds != 2 {
		t.Errorf("after a renewal with 2s: spec %d s, annotations %v", *l.Spec.LeaseDurationSeconds, l.Annotations)
	}
}
