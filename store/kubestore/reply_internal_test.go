package kubestore

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// replyLeases is a coordination client with one Lease, whose Update
// answers with what update makes of the Lease sent.
type replyLeases struct {
	coordinationclient.LeaseInterface
	lease  *coordinationv1.Lease
	update func(*coordinationv1.Lease) *coordinationv1.Lease
}

func (f *replyLeases) Leases(string) coordinationclient.LeaseInterface { return f }

func (f *replyLeases) Get(context.Context, string, metav1.GetOptions) (*coordinationv1.Lease, error) {
	return f.lease.DeepCopy(), nil
}

func (f *replyLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return f.update(l.DeepCopy()), nil
}

// tenureLease is the Lease "job" as Tenure writes it, at resourceVersion rv.
func tenureLease(t *testing.T, rv string) *coordinationv1.Lease {
	t.Helper()
	now := time.Now()
	enc, err := encodeRecord(lease.Record[string]{Holder: "a", Token: 7, AcquiredAt: now, RenewedAt: now, LeaseDuration: 2 * time.Second}, []byte(`"m"`))
	if err != nil {
		t.Fatal(err)
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", ResourceVersion: rv}}
	enc.apply(l)
	return l
}

// A resourceVersion above store.MaxRevision is a corrupt record, as the
// store contract has it, not an API server that etcd does not back.
func TestResourceVersionAboveMaxRevisionIsCorrupt(t *testing.T) {
	s, err := New[string](&replyLeases{lease: tenureLease(t, "9223372036854775808")}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(t.Context(), "job"); !errors.Is(err, store.ErrCorruptRecord) {
		t.Fatalf("Get = %v, want ErrCorruptRecord", err)
	}
	if _, err := parseRevision("abc"); errors.Is(err, store.ErrCorruptRecord) || !errors.Is(err, errRevision) {
		t.Fatalf("parseRevision(abc) = %v, want errRevision alone", err)
	}
}

// An API server that answers a write with a resourceVersion not above the
// one written from is refused: a store's own writes never go back.
func TestWriteAnsweredWithAnOlderRevisionIsRefused(t *testing.T) {
	f := &replyLeases{lease: tenureLease(t, "100"), update: func(l *coordinationv1.Lease) *coordinationv1.Lease {
		l.ResourceVersion = "5"
		return l
	}}
	s, err := New[string](f, "ns")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	_, rev, err := s.CompareAndSwap(t.Context(), "job", 100, lease.Record[string]{Holder: "a", Token: 7, AcquiredAt: now, RenewedAt: now, LeaseDuration: 2 * time.Second, Metadata: "m"})
	if err == nil {
		t.Fatalf("CompareAndSwap from 100 succeeded at revision %d, want an error", rev)
	}
}
