package storetest

import (
	"fmt"

	"github.com/tenure-go/tenure/store"
)

// testCreateVoucher checks CreateVouched (store.CreateVoucher): it creates
// as CompareAndSwap expecting revision 0 does, storing a create it vouches
// for with Claim false and any other as given; a create meeting a record
// is a conflict that reports the record, leaves it as it was and is never
// vouched for.
func testCreateVoucher[M any](e *env[M]) {
	v := store.CreateVoucherOf(e.st)
	if v == nil {
		e.t.Skipf("%T does not implement store.CreateVoucher", e.st)
	}
	name := e.name("vouch")
	next := e.term("holder-a", 1)
	next.Claim = true
	got, rev, vouched, err := v.CreateVouched(e.ctx, name, next)
	if err != nil {
		e.t.Fatalf("CreateVouched(%q): %v", name, err)
	}
	if rev == 0 || rev > store.MaxRevision {
		e.t.Errorf("CreateVouched(%q) returned revision %d, want one above 0 and at most store.MaxRevision", name, rev)
	}
	want := next
	want.Claim = !vouched
	e.written(fmt.Sprintf("CreateVouched(%q), vouched %v", name, vouched), got, want)
	e.stored(name, got, rev)

	again := e.term("holder-b", 1)
	again.Claim = true
	other, otherRev, vouched, err := v.CreateVouched(e.ctx, name, again)
	what := fmt.Sprintf("CreateVouched(%q) over a record", name)
	e.conflict(what, other, otherRev, err, got, rev)
	if vouched {
		e.t.Errorf("%s: vouched for a create that failed", what)
	}
	e.stored(name, got, rev)
}
