package endpointstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/storeurl"
)

// Raw returns a view of st with the metadata as JSON text: what the tenure
// command, which reads any store's records as json.RawMessage, needs.
// Writes through it must hold JSON that decodes as an Endpoint.
func Raw(st *Store) storeurl.Store[json.RawMessage] { return rawView{st} }

type rawView struct{ s *Store }

func (v rawView) MayLoseRecords() bool { return v.s.MayLoseRecords() }

// Close does nothing: the store lives as long as the process.
func (rawView) Close() error { return nil }

func (v rawView) Get(ctx context.Context, name string) (lease.Record[json.RawMessage], lease.Revision, error) {
	rec, rev, err := v.s.Get(ctx, name)
	if err != nil {
		return lease.Record[json.RawMessage]{}, 0, err
	}
	out, err := toRaw(rec)
	return out, rev, err
}

func (v rawView) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[json.RawMessage]) (lease.Record[json.RawMessage], lease.Revision, error) {
	var ep Endpoint
	if len(next.Metadata) > 0 {
		dec := json.NewDecoder(bytes.NewReader(next.Metadata))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ep); err != nil {
			return lease.Record[json.RawMessage]{}, 0, fmt.Errorf("endpointstore: %q: %w: the metadata is not an Endpoint: %w", name, store.ErrEncode, err)
		}
	}
	rec, rev, err := v.s.CompareAndSwap(ctx, name, expected, withMeta(next, ep))
	if rev == 0 {
		return lease.Record[json.RawMessage]{}, 0, err // no record to report
	}
	out, cerr := toRaw(rec)
	if err == nil {
		err = cerr
	}
	return out, rev, err
}

// WatchCapabilities claims nothing: the view re-encodes the events it
// passes on.
func (v rawView) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

func (v rawView) Watch(ctx context.Context, name string) (<-chan store.Event[json.RawMessage], error) {
	in, err := v.s.Watch(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[json.RawMessage])
	go func() {
		defer close(out)
		for ev := range in { // the Hub behind in skips to the newest meanwhile
			var rec lease.Record[json.RawMessage]
			if !ev.Absent && ev.Err == nil {
				var err error
				if rec, err = toRaw(ev.Record); err != nil {
					ev.Err = err
				}
			}
			select {
			case out <- store.Event[json.RawMessage]{Record: rec, Revision: ev.Revision, Absent: ev.Absent, Err: ev.Err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func toRaw(rec lease.Record[Endpoint]) (lease.Record[json.RawMessage], error) {
	b, err := json.Marshal(rec.Metadata)
	if err != nil {
		return lease.Record[json.RawMessage]{}, fmt.Errorf("endpointstore: %w: %w", store.ErrEncode, err)
	}
	return withMeta(rec, json.RawMessage(b)), nil
}

// withMeta returns r with metadata m.
func withMeta[A, B any](r lease.Record[A], m B) lease.Record[B] {
	return lease.Record[B]{
		Holder: r.Holder, Token: r.Token, Transitions: r.Transitions,
		AcquiredAt: r.AcquiredAt, RenewedAt: r.RenewedAt,
		LeaseDuration: r.LeaseDuration, Claim: r.Claim, Successor: r.Successor, Metadata: m,
	}
}
