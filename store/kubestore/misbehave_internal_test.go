package kubestore

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	fakecoordination "k8s.io/client-go/kubernetes/typed/coordination/v1/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tenure-go/tenure/store"
)

// fakeServer is a coordination client whose answers the test scripts with
// reactors: a misbehaving API server.
func fakeServer() (*fakecoordination.FakeCoordinationV1, *k8stesting.Fake) {
	f := &k8stesting.Fake{}
	return &fakecoordination.FakeCoordinationV1{Fake: f}, f
}

// listedLease is a Lease "name" as Tenure writes it, for a LIST answer.
func listedLease(t *testing.T, name, rv string) coordinationv1.Lease {
	t.Helper()
	l := tenureLease(t, rv)
	l.Name = name
	return *l
}

// List refuses a server that keeps answering with a continue token: the
// same token as the one just sent, a token it sent before (pages that
// repeat), or a page without a Lease. It must not loop (for ever, memory
// growing) on it.
func TestListRefusesAContinueTokenThatMakesNoProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		page func(t *testing.T, n int, sent string) *coordinationv1.LeaseList
	}{
		{"same token", func(t *testing.T, n int, sent string) *coordinationv1.LeaseList {
			return &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{Continue: "again"},
				Items: []coordinationv1.Lease{listedLease(t, fmt.Sprintf("l%d", n), "10")}}
		}},
		{"pages that repeat", func(t *testing.T, n int, sent string) *coordinationv1.LeaseList {
			// Two pages, each pointing at the other.
			if sent == "b" {
				return &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{Continue: "a"},
					Items: []coordinationv1.Lease{listedLease(t, "b", "10")}}
			}
			return &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{Continue: "b"},
				Items: []coordinationv1.Lease{listedLease(t, "a", "10")}}
		}},
		{"the same Leases under new tokens", func(t *testing.T, n int, sent string) *coordinationv1.LeaseList {
			return &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{Continue: fmt.Sprintf("t%d", n)},
				Items: []coordinationv1.Lease{listedLease(t, "a", "10")}}
		}},
		{"empty pages", func(t *testing.T, n int, sent string) *coordinationv1.LeaseList {
			return &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{Continue: fmt.Sprintf("t%d", n)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := fakeServer()
			const stop = 100 // the fake gives up then, so that a loop ends
			var requests atomic.Int32
			f.PrependReactor("list", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
				n := int(requests.Add(1))
				if n >= stop {
					return true, nil, errors.New("the fake server gives up")
				}
				sent := a.(k8stesting.ListActionImpl).ListOptions.Continue
				return true, tc.page(t, n, sent), nil
			})
			s, err := New[string](c, "ns")
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.List(t.Context(), "")
			if !errors.Is(err, ErrUnexpectedReply) {
				t.Fatalf("List = %d records, error %v, after %d requests; want an error wrapping ErrUnexpectedReply", len(got), err, requests.Load())
			}
			if n := requests.Load(); n > 3 {
				t.Fatalf("List sent %d requests before failing (%v); want it to stop at the first page without progress", n, err)
			}
		})
	}
}

// A Lease whose metadata annotation is larger than store.MaxMetadataBytes
// is a corrupt record, as store.ValidateStored and etcdstore have it, on
// every read: Get, List, and an update that would overwrite it.
func TestMetadataAboveMaxMetadataBytesIsCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(l *coordinationv1.Lease)
	}{
		{"plain", func(l *coordinationv1.Lease) {
			l.Annotations[AnnotationMetadata] = `"` + strings.Repeat("x", store.MaxMetadataBytes) + `"`
		}},
		{"base64", func(l *coordinationv1.Lease) {
			delete(l.Annotations, AnnotationMetadata)
			// The JSON codec reads this too: a string, with bytes that
			// are not UTF-8 (hence base64).
			b := append([]byte(`"`), make([]byte, store.MaxMetadataBytes)...)
			for i := 1; i < len(b); i++ {
				b[i] = 'y'
			}
			b[1] = 0xff
			b = append(b, '"')
			l.Annotations[AnnotationMetadataBase64] = base64.StdEncoding.EncodeToString(b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tenureLease(t, "100")
			tc.set(l)
			s, err := New[string](&replyLeases{lease: l}, "ns")
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Get(t.Context(), "job"); !errors.Is(err, store.ErrCorruptRecord) {
				t.Fatalf("Get = %v, want an error wrapping ErrCorruptRecord", err)
			}
		})
	}
}

// The per-name watch (RBAC refused the namespace-wide one) does not
// reconnect at once, again and again, when the API server closes each
// watch as soon as it opens it: it backs off, as the shared watch does.
func TestPerNameWatchBacksOffWhenTheServerClosesAtOnce(t *testing.T) {
	c, f := fakeServer()
	f.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, tenureLease(t, "100"), nil
	})
	// Within 300 ms, a backoff starting at 50 ms and doubling allows a
	// handful of requests; reconnecting at once makes thousands.
	const most = 10
	var watches atomic.Int32
	tooMany := make(chan struct{})
	f.PrependWatchReactor("leases", func(k8stesting.Action) (bool, watch.Interface, error) {
		if watches.Add(1) == most+1 {
			close(tooMany)
		}
		w := watch.NewFake()
		w.Stop() // closed at once, without an event
		return true, w, nil
	})
	s, err := New[string](c, "ns")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ch, err := s.watchOne(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Revision != 100 {
		t.Fatalf("first event %+v, want the Lease at revision 100", ev)
	}
	deadline := time.After(300 * time.Millisecond)
	for {
		select {
		case <-deadline:
			return
		case _, ok := <-ch:
			if !ok {
				return // gave up: no busy loop either
			}
			continue
		case <-tooMany:
		}
		break
	}
	t.Fatalf("%d watch requests within 300 ms of a server that closes each at once; want at most %d (a backoff)", watches.Load(), most)
}
