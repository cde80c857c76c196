package store

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
)

// CreateVoucher is implemented by stores that can vouch for a create: say
// that a record they just created follows no loss of records. On a store
// that may lose records (Lossy), a record a node creates is normally only a
// claim: absence cannot tell a brand-new name from a record the store lost
// while its holder still believes it leads, so the creator leads on it only
// after it has stood for a LeaseDuration. A store that can tell the two
// apart (redisstore, with its dataset marker) vouches for a create
// instead, and the creator leads at once.
//
// Electors create through CreateVouched when CreateVoucherOf finds it, and
// with a plain CompareAndSwap otherwise. A store that does not implement
// it, says false, or is hidden by a wrapper vouches for nothing, which is
// the conservative answer: every create is then a claim. So the vouch can
// be lost, never forged by omission. A wrapper forwards both methods
// (store.CreateVoucherOf answers for any store); one that changes
// CompareAndSwap must not let its store's CreateVouched be promoted past
// it.
type CreateVoucher[M any] interface {
	// VouchesCreates reports whether CreateVouched may vouch for a
	// create: a wrapper answers for the store it wraps.
	VouchesCreates() bool
	// CreateVouched creates next under name as CompareAndSwap expecting
	// revision 0 does, and reports whether the store vouches for the
	// create: only when that very call created the record, with a nil
	// error, and the store knows that it lost no record during next's
	// LeaseDuration before the create (and that no record of the name
	// was deleted since the store last lost its data). A create it
	// vouches for is stored and returned with Claim false, since its
	// creator leads on it at once (see lease.Record's Claim); any other
	// is stored as CompareAndSwap stores it.
	CreateVouched(ctx context.Context, name string, next lease.Record[M]) (lease.Record[M], lease.Revision, bool, error)
}

// CreateVoucherOf returns st's CreateVoucher when st implements it and
// says that it vouches for creates, and nil (the conservative answer:
// every create is a claim) when it does not or st is nil.
func CreateVoucherOf[M any](st Store[M]) CreateVoucher[M] {
	if v, ok := st.(CreateVoucher[M]); ok && !nilarg.IsNil(v) && v.VouchesCreates() {
		return v
	}
	return nil
}

// CreateVouched creates next under name on st and reports whether st
// vouched for the create (see CreateVoucher): with st's CreateVouched when
// CreateVoucherOf finds one, and otherwise with st's CompareAndSwap
// expecting revision 0, vouched for by nobody. A create that fails is
// never vouched for. Electors create with it, and a wrapper forwards
// CreateVouched with it (and VouchesCreates with CreateVoucherOf), so that
// its electors lead at once exactly when the wrapped store vouches. It
// returns an error wrapping ErrNilArgument for a nil ctx or st.
func CreateVouched[M any](ctx context.Context, st Store[M], name string, next lease.Record[M]) (lease.Record[M], lease.Revision, bool, error) {
	switch {
	case ctx == nil:
		return lease.Record[M]{}, 0, false, fmt.Errorf("store: CreateVouched %q: %w: ctx is nil", name, ErrNilArgument)
	case nilarg.IsNil(st):
		return lease.Record[M]{}, 0, false, fmt.Errorf("store: CreateVouched %q: %w: st is nil", name, ErrNilArgument)
	}
	v := CreateVoucherOf(st)
	if v == nil {
		rec, rev, err := st.CompareAndSwap(ctx, name, 0, next)
		return rec, rev, false, err
	}
	rec, rev, vouched, err := v.CreateVouched(ctx, name, next)
	return rec, rev, vouched && err == nil, err
}
