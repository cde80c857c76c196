package store

import (
	"context"
	"sync/atomic"
)

// CreateVouch receives a store's word that a create it just made follows no
// loss of records. On a store that may lose records (Lossy), a record a
// node creates is normally only a claim: absence cannot tell a brand-new
// name from a record the store lost while its holder still believes it
// leads, so the creator leads on it only after it has stood for a
// LeaseDuration. A store that can tell the two apart (redisstore, with its
// dataset marker) vouches for a create instead, and the creator leads at
// once.
//
// The caller attaches a CreateVouch to the context of a CompareAndSwap that
// expects no record (WithCreateVouch); the store calls VouchCreate with that
// context only when that very call created the record, returns success, and
// the store knows that it lost no record during the created record's
// LeaseDuration before the create (and that no record of the name was
// deleted since the store last lost its data). Anything else leaves it
// unvouched, which is the conservative answer: a store that cannot tell, a
// wrapper that does not pass the context on, a create that failed or whose
// outcome is unknown. So the vouch can be lost, never forged by omission.
//
// The zero value is ready to use; a nil *CreateVouch is never vouched.
type CreateVouch struct {
	vouched atomic.Bool
}

// Vouched reports whether a store vouched for the create. It is false for
// a nil v.
func (v *CreateVouch) Vouched() bool {
	return v != nil && v.vouched.Load()
}

// vouchKey is the context key of a CreateVouch.
type vouchKey struct{}

// WithCreateVouch returns a copy of ctx that carries v, for the
// CompareAndSwap of a create. A nil ctx is taken as context.Background();
// a nil v returns ctx unchanged.
func WithCreateVouch(ctx context.Context, v *CreateVouch) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if v == nil {
		return ctx
	}
	return context.WithValue(ctx, vouchKey{}, v)
}

// VouchAsked is for stores: it reports whether ctx carries a CreateVouch,
// that is whether the caller of a create asked the store to vouch for it.
// A store that vouches for such a create stores its record with Claim
// false, since its creator leads on it at once (see lease.Record's Claim);
// a create nobody asked a vouch for is stored as given. A nil ctx carries
// none.
func VouchAsked(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	v, ok := ctx.Value(vouchKey{}).(*CreateVouch)
	return ok && v != nil
}

// VouchCreate is for stores: it marks the CreateVouch that ctx carries, if
// any, as vouched. Call it only under the conditions of CreateVouch. A nil
// ctx does nothing.
func VouchCreate(ctx context.Context) {
	if ctx == nil {
		return
	}
	if v, ok := ctx.Value(vouchKey{}).(*CreateVouch); ok && v != nil {
		v.vouched.Store(true)
	}
}
