package lead

import (
	"context"
	"testing"
)

// A term counts its bodies: once the loop has ended it (seal), no body
// starts in it, and the last body running tells the loop when it returns.
func TestEndedTermStartsNoBodyAndItsLastBodyTellsTheLoop(t *testing.T) {
	var b termBodies
	termCtx := context.WithValue(context.Background(), termKey{}, &b)
	body := func(ran *bool, inside func()) func(context.Context, Term) error {
		return func(context.Context, Term) error {
			*ran = true
			if inside != nil {
				inside()
			}
			return nil
		}
	}
	drained := 0
	var first, second bool
	lost, err := runInTerm(context.Background(), termCtx, Term{}, body(&first, func() {
		if n := b.running(); n != 1 {
			t.Errorf("running = %d inside the body, want 1", n)
		}
		b.seal(func() { drained++ })
		if drained != 0 {
			t.Error("drained called while the body runs")
		}
	}))
	if !first || lost || err != nil {
		t.Fatalf("first body: ran %v, lost %v, err %v", first, lost, err)
	}
	if drained != 1 || b.running() != 0 {
		t.Fatalf("after the last body returned: drained %d times, %d running; want 1, 0", drained, b.running())
	}
	lost, err = runInTerm(context.Background(), termCtx, Term{}, body(&second, nil))
	if second || !lost || err != nil {
		t.Fatalf("body in an ended term: ran %v, lost %v, err %v; want not run, lost", second, lost, err)
	}
	if drained != 1 {
		t.Fatalf("drained called %d times, want 1", drained)
	}
}
