package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// voucher is a store that vouches for its creates when yes, and fails
// them with err; it counts the creates it was asked to vouch for.
type voucher struct {
	bare
	yes   bool
	err   error
	asked int
}

func (v *voucher) VouchesCreates() bool { return v.yes }

func (v *voucher) CreateVouched(_ context.Context, _ string, next lease.Record[int]) (lease.Record[int], lease.Revision, bool, error) {
	v.asked++
	next.Claim = false
	return next, 1, true, v.err
}

// voucherWrapper forwards the vouch with the package's helpers.
type voucherWrapper struct{ store.Store[int] }

func (w voucherWrapper) VouchesCreates() bool { return store.CreateVoucherOf(w.Store) != nil }

func (w voucherWrapper) CreateVouched(ctx context.Context, name string, next lease.Record[int]) (lease.Record[int], lease.Revision, bool, error) {
	return store.CreateVouched(ctx, w.Store, name, next)
}

// Only a store that says so vouches for creates: not one without the
// method, one that says false, one hidden by an embedding wrapper, a
// wrapper of a store that does not vouch, a nil store or a typed nil. A
// wrapper that forwards with the helpers answers for its store.
func TestCreateVoucherOfFindsOnlyAStoreThatSaysSo(t *testing.T) {
	var nilVoucher *voucher
	yes := &voucher{yes: true}
	tests := []struct {
		name string
		st   store.Store[int]
		want bool
	}{
		{"nil store", nil, false},
		{"store without CreateVoucher", bare{}, false},
		{"store that says yes", yes, true},
		{"store that says no", &voucher{}, false},
		{"embedding wrapper hides it", struct{ store.Store[int] }{yes}, false},
		{"forwarding wrapper of a voucher", voucherWrapper{yes}, true},
		{"forwarding wrapper of a store without one", voucherWrapper{bare{}}, false},
		{"forwarding wrapper of a store that says no", voucherWrapper{&voucher{}}, false},
		{"typed nil", nilVoucher, false},
	}
	for _, tt := range tests {
		if got := store.CreateVoucherOf(tt.st) != nil; got != tt.want {
			t.Errorf("%s: CreateVoucherOf found one: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// CreateVouched reports the store's vouch only when the store vouches and
// the create succeeded. A store that does not vouch, or that a wrapper
// hides, gets a plain create that nobody vouched for: a safety rule never
// rests on something a wrapper can hide.
func TestCreateVouchedVouchesOnlyThroughAVoucher(t *testing.T) {
	ctx := t.Context()
	failed := errors.New("failed")
	claim := lease.Record[int]{Holder: "a", Claim: true}
	tests := []struct {
		name      string
		st        store.Store[int]
		voucher   *voucher // asked for the vouch, if any
		want      bool
		wantClaim bool
	}{
		{"store that vouches", &voucher{yes: true}, nil, true, false},
		{"forwarding wrapper of a store that vouches", voucherWrapper{&voucher{yes: true}}, nil, true, false},
		{"store without CreateVoucher", bare{}, nil, false, true},
		{"store that says no", &voucher{}, nil, false, true},
		{"embedding wrapper hides it", struct{ store.Store[int] }{&voucher{yes: true}}, nil, false, true},
		{"failed create", &voucher{yes: true, err: failed}, nil, false, false},
	}
	for _, tt := range tests {
		got, rev, vouched, err := store.CreateVouched(ctx, tt.st, "n", claim)
		if vouched != tt.want || got.Claim != tt.wantClaim || rev != 1 {
			t.Errorf("%s: vouched %v, Claim %v, revision %d (error %v); want vouched %v, Claim %v, revision 1", tt.name, vouched, got.Claim, rev, err, tt.want, tt.wantClaim)
		}
	}
	var hidden voucher
	hidden.yes = true
	store.CreateVouched(ctx, struct{ store.Store[int] }{&hidden}, "n", claim)
	if hidden.asked != 0 {
		t.Errorf("a store hidden by a wrapper was asked for a vouch %d times", hidden.asked)
	}
	var nilCtx context.Context
	if _, _, vouched, err := store.CreateVouched(nilCtx, &voucher{yes: true}, "n", claim); !errors.Is(err, store.ErrNilArgument) || vouched {
		t.Errorf("nil ctx: vouched %v, error %v; want not vouched, an error wrapping store.ErrNilArgument", vouched, err)
	}
	if _, _, vouched, err := store.CreateVouched(ctx, nil, "n", claim); !errors.Is(err, store.ErrNilArgument) || vouched {
		t.Errorf("nil store: vouched %v, error %v; want not vouched, an error wrapping store.ErrNilArgument", vouched, err)
	}
}

// A driver creates through CreateVouched: a store that can tell that it
// lost no record lately vouches for the create, and its creator leads at
// once; behind a wrapper that hides the method, it is a claim.
func ExampleCreateVouched() {
	st := &voucher{yes: true}
	claim := lease.Record[int]{Holder: "a", Claim: true}
	_, _, vouched, _ := store.CreateVouched(context.Background(), st, "job", claim)
	fmt.Println("lead at once:", vouched)
	_, _, vouched, _ = store.CreateVouched(context.Background(), struct{ store.Store[int] }{st}, "job", claim)
	fmt.Println("behind a hiding wrapper:", vouched)
	// Output:
	// lead at once: true
	// behind a hiding wrapper: false
}
