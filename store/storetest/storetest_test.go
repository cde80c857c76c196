package storetest_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// gobCodec encodes with encoding/gob, which does not tell a nil map or slice
// from an empty one.
type gobCodec struct{}

func (gobCodec) Encode(m storetest.Meta) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(m); err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrEncode, err)
	}
	return b.Bytes(), nil
}

func (gobCodec) Decode(data []byte) (storetest.Meta, error) {
	var m storetest.Meta
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return m, fmt.Errorf("%w: %w", store.ErrCorruptRecord, err)
	}
	return m, nil
}

// liberalStore takes every liberty the contract allows: its codec does not
// tell nil from empty, it sets the times of every record it writes from its
// own clock to the millisecond, and it raises the token of every record it
// creates above a floor shared by all its instances, as a server that keeps
// tokens increasing across data loss might.
type liberalStore struct {
	*memstore.Store[storetest.Meta]
	floor *atomic.Uint64
}

func (s liberalStore) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[storetest.Meta]) (lease.Record[storetest.Meta], lease.Revision, error) {
	now := time.Now().Truncate(time.Millisecond)
	next.AcquiredAt, next.RenewedAt = now, now
	if expected == 0 {
		next.Token = max(next.Token, s.floor.Add(1000))
	}
	return s.Store.CompareAndSwap(ctx, name, expected, next)
}

// The suite accepts a store that uses all the latitude it documents.
func TestLiberalStorePasses(t *testing.T) {
	var floor atomic.Uint64
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return liberalStore{memstore.NewWithCodec[storetest.Meta](gobCodec{}), &floor}
	})
}

// getOnly hides Watch: the Watch checks are skipped, the others run.
type getOnly struct{ store.Store[storetest.Meta] }

func TestStoreWithoutWatch(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return getOnly{memstore.New[storetest.Meta]()}
	})
}

// pin is a metadata type of its own, as a store tied to one type has.
type pin struct {
	Addr  string            `json:"addr"`
	Ports []int             `json:"ports,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
}

// A store of another metadata type passes with the caller's samples, and
// the checks that need more than samples run when given what they need.
func TestOtherMetadataType(t *testing.T) {
	samples := []pin{{}, {Addr: "10.0.0.1:80", Ports: []int{80, 443}, Tags: map[string]string{"zone": "b"}}}
	for i := range 5 {
		samples = append(samples, pin{Addr: fmt.Sprintf("host-%d:%d", i, 8000+i)}) // a generator
	}
	t.Run("pin", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store[pin] { return memstore.New[pin]() },
			storetest.WithSamples(samples...),
			storetest.WithOversized(func() pin { return pin{Addr: strings.Repeat("a", store.MaxMetadataBytes)} }),
			storetest.WithShared(
				func() pin { return pin{Ports: []int{1}, Tags: map[string]string{"k": "before"}} },
				func(p *pin) { p.Ports[0] = 2; p.Tags["k"] = "after" }),
		)
	})
	// Plain strings, with nothing but samples: the checks that need more
	// are skipped, saying so.
	t.Run("string", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store[string] { return memstore.New[string]() },
			storetest.WithSamples("", "primary", "héllo ✓"))
	})
}

// A store opened again on the same memstore (a new Store value over the
// same data) keeps the token floor, which memstore keeps with its data.
func TestReopenOverSharedData(t *testing.T) {
	shared := memstore.New[storetest.Meta]()
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] { return memstore.New[storetest.Meta]() },
		storetest.WithReopen(func(t *testing.T) store.Store[storetest.Meta] { return getOnly{shared} }),
		storetest.WithDelete[storetest.Meta](func(t *testing.T, name string) { shared.Delete(name) }))
}

// server is the data of forgetfulStore, shared by its Store values as a
// database is by its clients: records and a revision counter.
type server struct {
	mu   sync.Mutex
	recs map[string]storedRecord
	rev  lease.Revision
}

type storedRecord struct {
	rec lease.Record[storetest.Meta]
	rev lease.Revision
}

// forgetfulStore keeps each name's token floor in the Store value instead
// of with the data: within one Store value its tokens are right, but a
// store opened again issues a new term a token from the proposal alone.
type forgetfulStore struct {
	srv  *server
	seen map[string]uint64 // guarded by srv.mu
}

func (s forgetfulStore) Get(_ context.Context, name string) (lease.Record[storetest.Meta], lease.Revision, error) {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	r, ok := s.srv.recs[name]
	if !ok {
		return lease.Record[storetest.Meta]{}, 0, store.ErrNotFound
	}
	return r.rec, r.rev, nil
}

func (s forgetfulStore) CompareAndSwap(_ context.Context, name string, expected lease.Revision, next lease.Record[storetest.Meta]) (lease.Record[storetest.Meta], lease.Revision, error) {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	cur, ok := s.srv.recs[name]
	if cur.rev != expected {
		return cur.rec, cur.rev, store.ErrConflict
	}
	if !ok || !store.Renews(cur.rec, next) {
		tok, err := store.NewToken(next.Token, s.seen[name])
		if err != nil {
			return lease.Record[storetest.Meta]{}, 0, err
		}
		next.Token = tok
	}
	s.seen[name] = max(s.seen[name], next.Token)
	s.srv.rev++
	s.srv.recs[name] = storedRecord{next, s.srv.rev}
	return next, s.srv.rev, nil
}

// The reopen check fails a store whose token floor lives in a Store value:
// run in a child process, since the failure is the point.
func TestReopenCatchesAFloorKeptInTheStoreValue(t *testing.T) {
	if os.Getenv("STORETEST_FORGETFUL") == "1" {
		srv := &server{recs: map[string]storedRecord{}}
		open := func(t *testing.T) store.Store[storetest.Meta] { return forgetfulStore{srv, map[string]uint64{}} }
		storetest.Run(t, open, storetest.WithReopen(open),
			storetest.WithDelete[storetest.Meta](func(t *testing.T, name string) {
				srv.mu.Lock()
				defer srv.mu.Unlock()
				delete(srv.recs, name)
			}))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReopenCatchesAFloorKeptInTheStoreValue$/^(NewTermTokens|TokenFloorAcrossReopen)$", "-test.v")
	cmd.Env = append(os.Environ(), "STORETEST_FORGETFUL=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a store whose token floor lives in its Store value:\n%s", out)
	}
	for _, want := range []string{
		"--- PASS: TestReopenCatchesAFloorKeptInTheStoreValue/NewTermTokens",
		"--- FAIL: TestReopenCatchesAFloorKeptInTheStoreValue/TokenFloorAcrossReopen",
		"taking over a held record through a store opened again: a new term got Token 1",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output lacks %q:\n%s", want, out)
		}
	}
}
