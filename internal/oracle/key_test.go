package oracle

import (
	"bytes"
	"testing"
)

func TestAppendKeyTellsStatesApart(t *testing.T) {
	x := Rec{Holder: "x", Token: 1}
	// Two stores: one that held two records at revision 3, one that held
	// one and was rolled back three times.
	o1 := newTest()
	o1.Applied(0, o1.Send(outsider, 0, 0, x), 3, x, 0)
	o1.Applied(0, o1.Send(outsider, 0, 0, Rec{}), 3, Rec{}, 0)
	o2 := newTest()
	o2.Applied(-1, o2.Send(outsider, -1, 0, x), 3, x, 0)
	o2.Rollback(-1, 0)
	o2.Rollback(0, 0)
	o2.Rollback(0, 0)
	if bytes.Equal(o1.AppendKey(nil), o2.AppendKey(nil)) {
		t.Fatal("a store that held two records and one rolled back three times have one key")
	}
}

func TestAppendKeyIsTheSameForTheSameState(t *testing.T) {
	x, y := Rec{Holder: "x", Token: 1}, Rec{Holder: "y", Token: 2}
	// The same records held in another order, the store holding x now.
	o1, o2 := newTest(), newTest()
	for _, r := range []Rec{x, y, x} {
		o1.Applied(0, o1.Send(outsider, 0, 0, r), 3, r, 0)
	}
	for _, r := range []Rec{y, x} {
		o2.Applied(0, o2.Send(outsider, 0, 0, r), 3, r, 0)
	}
	if !bytes.Equal(o1.AppendKey(nil), o2.AppendKey(nil)) {
		t.Fatal("the same records held in another order give another key")
	}
}
