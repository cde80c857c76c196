package oracle

import (
	"strings"
	"testing"
	"time"
)

const ms = Time(time.Millisecond)

func newTest() *Oracle {
	return New(Params{MaxRenewDeadline: 4 * time.Millisecond, Complete: true})
}

// acquire records n's write of a new term with token tok over expected,
// stored at rev, sent at sent and applied at applied.
func acquire(o *Oracle, n Node, sent, applied Time, expected, rev Rev, holder string, tok uint64) {
	sn := o.Send(n, sent, expected, Rec{Holder: holder, Token: tok})
	o.Applied(applied, sn, rev, Rec{Holder: holder, Token: tok}, 0)
	o.Deliver(n, applied, rev, Rec{Holder: holder, Token: tok}, true)
}

func TestHandoverAfterTheEndIsSafe(t *testing.T) {
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	acquire(o, a, 0, 1*ms, 0, 1, "a", 1)
	o.Belief(a, 1*ms, true, 1)
	o.Belief(a, 5*ms, false, 0)
	acquire(o, b, 8*ms, 9*ms, 1, 2, "b", 2)
	o.Belief(a, 9*ms, false, 0)
	o.Belief(b, 9*ms, true, 2)
	if o.Failed() {
		t.Fatal(o.Violations())
	}
}

func TestOverlapOnAnHonestStoreIsAViolation(t *testing.T) {
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	acquire(o, a, 0, 1*ms, 0, 1, "a", 1)
	o.Belief(a, 1*ms, true, 1)
	acquire(o, b, 2*ms, 3*ms, 1, 2, "b", 2)
	o.Belief(a, 3*ms, true, 1)
	o.Belief(b, 3*ms, true, 2)
	if v := o.Violations(); len(v) != 1 || v[0].Check != CheckOneLeader {
		t.Fatalf("violations %v, want one of %s", v, CheckOneLeader)
	}
}

// rolledBack: a leads; the store rolls back to revision 1 (a release) and
// b takes it. knew says b had been delivered a's record at revision 2.
func rolledBack(knew bool, aEnds Time) *Oracle {
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	sn := o.Send(Node{ID: 2}, 0, 0, Rec{})
	o.Applied(0, sn, 1, Rec{}, 0)
	o.Deliver(b, 0, 1, Rec{}, true)
	acquire(o, a, 1*ms, 1*ms, 1, 2, "a", 1)
	o.Belief(a, 1*ms, true, 1)
	if knew {
		o.Deliver(b, 1*ms, 2, Rec{Holder: "a", Token: 1}, true)
	}
	o.Rollback(2*ms, 1)
	acquire(o, b, 2*ms, 3*ms, 1, 3, "b", 2)
	o.Belief(a, 3*ms, true, 1)
	o.Belief(b, 3*ms, true, 2)
	o.Belief(a, aEnds, aEnds < 5*ms, 1)
	o.Belief(a, aEnds+1, false, 0)
	return o
}

func TestRollbackExcusesAnOverlapNobodyCouldHaveKnown(t *testing.T) {
	if o := rolledBack(false, 4*ms); o.Failed() {
		t.Fatal(o.Violations())
	}
}

func TestRollbackSeenIsNoExcuse(t *testing.T) {
	o := rolledBack(true, 4*ms)
	if v := o.Violations(); len(v) != 1 || !strings.Contains(v[0].Msg, "both lead") {
		t.Fatalf("violations %v, want two leaders", v)
	}
}

func TestExcusedOverlapPastItsBoundIsAViolation(t *testing.T) {
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	acquire(o, a, 1*ms, 1*ms, 0, 1, "a", 1)
	o.Belief(a, 1*ms, true, 1)
	o.Rollback(2*ms, 0)
	acquire(o, b, 2*ms, 3*ms, 0, 2, "b", 2)
	o.Belief(a, 3*ms, true, 1)
	o.Belief(b, 3*ms, true, 2)
	at, ok := o.Pending()
	if !ok || at != 1*ms+Time(o.Bound())+1 {
		t.Fatalf("Pending = %v, %v; want a's last stored write plus the bound", at, ok)
	}
	o.Belief(a, at, true, 1)
	if v := o.Violations(); len(v) != 1 || !strings.Contains(v[0].Msg, "past the end of its excused overlap") {
		t.Fatalf("violations %v, want the bound exceeded", v)
	}
}

func TestEqualTokensOfTwoTermsAreAViolation(t *testing.T) {
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	acquire(o, a, 0, 1*ms, 0, 1, "a", 5)
	o.Rollback(2*ms, 0)
	acquire(o, b, 20*ms, 21*ms, 0, 2, "b", 5)
	if v := o.Violations(); len(v) != 1 || v[0].Check != CheckTokens {
		t.Fatalf("violations %v, want one of %s", v, CheckTokens)
	}
}
