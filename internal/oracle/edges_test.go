package oracle

import (
	"bytes"
	"testing"
)

// outsider is a writer outside the election (an operator's tool).
var outsider = Node{ID: -1}

// excusedABA records the ABA no elector can see up to the excused overlap:
// a (node 0) leads from 1ms, renews at 3ms, the store rolls back at 4ms,
// and b (node 1), told nothing newer than revision 1, takes over at 5ms.
func excusedABA(t *testing.T) (*Oracle, Node, Node) {
	t.Helper()
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	acquire(o, a, 0, 1*ms, 0, 1, "a", 1)
	o.Deliver(b, 1*ms, 1, Rec{Holder: "a", Token: 1}, true)
	o.Belief(a, 1*ms, true, 1)
	o.Belief(b, 1*ms, false, 0)
	acquire(o, a, 3*ms, 3*ms, 1, 2, "a", 1)
	o.Rollback(4*ms, 1)
	acquire(o, b, 5*ms, 5*ms, 1, 3, "b", 2)
	o.Belief(a, 5*ms, true, 1)
	o.Belief(b, 5*ms, true, 2)
	if o.Failed() {
		t.Fatalf("the ABA no elector can see failed: %v", o.Violations())
	}
	if _, ok := o.Pending(); !ok {
		t.Fatal("an excused overlap left nothing pending")
	}
	return o, a, b
}

func TestPendingEndsWhenTheExcusedTermEnds(t *testing.T) {
	o, a, _ := excusedABA(t)
	o.Belief(a, 6*ms, false, 0)
	if at, ok := o.Pending(); ok {
		t.Fatalf("Pending = %v after the excused term ended", at)
	}
}

func TestPendingEndsWhenTheExcusedIncarnationRestarts(t *testing.T) {
	o, a, _ := excusedABA(t)
	o.Boot(Node{ID: a.ID, Gen: 1}, 6*ms)
	if at, ok := o.Pending(); ok {
		t.Fatalf("Pending = %v after the excused incarnation was replaced", at)
	}
	if o.Failed() {
		t.Fatal(o.Violations())
	}
}

func TestPendingEndsWhenTheExcusedIncarnationGoesDown(t *testing.T) {
	o, a, _ := excusedABA(t)
	o.Down(a, 6*ms)
	if at, ok := o.Pending(); ok {
		t.Fatalf("Pending = %v after the excused incarnation went down", at)
	}
}

// An overlap judged against a term that had already ended, found when the
// other term's next sample stretches it over the ended one (a poller's
// samples), excuses the ended term and leaves nothing to wait for.
func TestExcusedOverlapWithAnEndedTermLeavesNothingPending(t *testing.T) {
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	acquire(o, a, 0, 1*ms, 0, 1, "a", 1)
	o.Rollback(2*ms, 0)
	acquire(o, b, 2*ms, 3*ms, 0, 2, "b", 2)
	o.Belief(b, 3*ms, true, 2)
	o.Belief(a, 4*ms, true, 1)
	o.Belief(a, 5*ms, false, 0)
	o.Belief(b, 6*ms, true, 2) // b led over [3ms, 6ms], across a's [4ms, 4ms]
	if o.Failed() {
		t.Fatal(o.Violations())
	}
	if at, ok := o.Pending(); ok {
		t.Fatalf("Pending = %v for a term that ended", at)
	}
}

func TestBeliefOfADownOrReplacedIncarnationIsIgnored(t *testing.T) {
	o := newTest()
	a, b := Node{ID: 0}, Node{ID: 1}
	o.Boot(a, 0)
	o.Boot(b, 0)
	acquire(o, b, 0, 1*ms, 0, 1, "b", 1)
	o.Belief(b, 1*ms, true, 1)
	o.Down(a, 2*ms)
	o.Belief(a, 3*ms, true, 9) // down: believes nothing
	o.Boot(Node{ID: 0, Gen: 1}, 4*ms)
	o.Belief(a, 5*ms, true, 9)                   // gen 0 is gone
	o.Belief(Node{ID: 7, Gen: 0}, 5*ms, true, 9) // never booted
	o.Belief(b, 5*ms, true, 1)
	if o.Failed() {
		t.Fatal(o.Violations())
	}
}

func TestBootOfANewGenWhileTheOldLeadsEndsTheOldTerm(t *testing.T) {
	o := newTest()
	a0, a1, b := Node{ID: 0}, Node{ID: 0, Gen: 1}, Node{ID: 1}
	o.Boot(a0, 0)
	o.Boot(b, 0)
	acquire(o, a0, 0, 1*ms, 0, 1, "a", 1)
	o.Belief(a0, 1*ms, true, 1)
	o.Boot(a1, 2*ms)
	o.Belief(a0, 2*ms, true, 1) // the old incarnation's sample is ignored
	o.Deliver(b, 9*ms, 1, Rec{Holder: "a", Token: 1}, true)
	acquire(o, b, 9*ms, 9*ms, 1, 2, "b", 2)
	o.Belief(b, 9*ms, true, 2)
	o.Belief(a1, 9*ms, false, 0)
	if o.Failed() {
		t.Fatal(o.Violations())
	}
	// The new incarnation believing the old one's token is a violation:
	// no write of its own stored it.
	o.Belief(a1, 10*ms, true, 1)
	if v := o.Violations(); len(v) == 0 || v[0].Check != CheckTokens {
		t.Fatalf("violations %v, want the old incarnation's token refused", v)
	}
}

func TestKnowledgeAtLargeRevisions(t *testing.T) {
	const big = Rev(denseLimit) + 5
	o := newTest()
	b := Node{ID: 1}
	o.Boot(b, 0)
	for _, r := range []Rec{{Holder: "a", Token: 1}, {Holder: "c", Token: 2}} {
		o.Applied(0, o.Send(outsider, 0, 0, r), big, r, 0)
	}
	o.Deliver(b, 1, big, Rec{Holder: "x", Token: 3}, true) // never held: forged
	if sn := o.Send(b, 1, big-1, Rec{}); sn.live > sn.expected {
		t.Fatal("a forged record at a large revision counted as knowledge")
	}
	o.Deliver(b, 1, big, Rec{Holder: "c", Token: 2}, true)
	if sn := o.Send(b, 1, big-1, Rec{}); sn.live <= sn.expected {
		t.Fatal("a genuine record at a large revision, the second the store held there, was no knowledge")
	}
	if sn := o.Send(b, 1, big, Rec{}); sn.live > sn.expected {
		t.Fatal("a record at the expected revision counted as knowledge of a newer one")
	}
}

func TestCloneIsIndependent(t *testing.T) {
	o, a, b := excusedABA(t)
	before := o.AppendKey(nil)
	c := o.Clone()
	if !bytes.Equal(c.AppendKey(nil), before) {
		t.Fatal("a clone's key differs from its original's")
	}
	// Change every part of the clone's state.
	c.Boot(Node{ID: 2}, 6*ms)
	c.Deliver(b, 6*ms, 3, Rec{Holder: "b", Token: 2}, true)
	acquire(c, b, 6*ms, 6*ms, 3, 1<<21, "b", 2)
	c.Forge(6*ms, 3, Rec{Holder: "m", Token: 3})
	c.Forge(6*ms, 1<<21, Rec{Holder: "", Token: 3})
	c.Restore(6*ms, 1, Rec{})
	c.Lose(6 * ms)
	acquire(c, Node{ID: 2}, 6*ms, 6*ms, 0, 9, "c", 1)
	c.Belief(Node{ID: 2}, 6*ms, true, 1)
	c.Belief(a, 20*ms, true, 1)
	if !c.Failed() {
		t.Fatal("the clone's history should have failed")
	}
	if o.Failed() || !bytes.Equal(o.AppendKey(nil), before) || len(o.Violations()) != 0 {
		t.Fatal("changing a clone changed its original")
	}
	o.Belief(a, 6*ms, false, 0)
	if o.Failed() {
		t.Fatal(o.Violations())
	}
}
