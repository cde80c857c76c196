package rt

import (
	"context"
	"time"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
)

// leadersSeen is what an incarnation's Leaders channel reported. It is
// guarded by harness.mu.
type leadersSeen struct {
	n      int
	holder string
	token  fence.Token
}

// followLeaders reads inc's Leaders channel until ctx ends, checking that
// it never reports the same holder and term twice in a row and that each
// value is consistent; poll checks that, when every goroutine is idle, the
// last value agrees with Record.
func (h *harness[M]) followLeaders(ctx context.Context, inc *incarnation[M]) {
	ch, err := inc.e.Leaders(ctx)
	if err != nil {
		h.fail(sim.CheckRun, "%s: Leaders: %v", inc.id, err)
		return
	}
	seen := &leadersSeen{}
	h.mu.Lock()
	inc.leaders = seen
	h.mu.Unlock()
	h.goRun(func() {
		for l := range ch {
			h.mu.Lock()
			switch {
			case seen.n > 0 && l.Holder == seen.holder && l.Token == seen.token:
				h.failLocked(sim.CheckObserver, "%s: Leaders reported %q (token %d) twice in a row", inc.id, l.Holder, l.Token)
			case l.Holder != "" && (!l.Present || l.Record.Holder != l.Holder || fence.Token(l.Record.Token) != l.Token || l.Revision == 0):
				h.failLocked(sim.CheckObserver, "%s: Leaders reported %q (token %d) with record %+v at revision %d", inc.id, l.Holder, l.Token, l.Record, l.Revision)
			case l.Self != (l.Holder != "" && l.Holder == inc.e.Identity()):
				h.failLocked(sim.CheckObserver, "%s: Leaders reported %q with Self %v", inc.id, l.Holder, l.Self)
			}
			seen.n++
			seen.holder, seen.token = l.Holder, l.Token
			h.mu.Unlock()
		}
	})
}

// leadersAgree checks that the last holder inc's Leaders channel reported
// is the one Record shows (rec, ok, read before h.mu was taken): at once in
// a bubble, where every goroutine is idle when poll looks, and in real time
// once the disagreement has outlasted the tolerance (see suspectLocked).
// h.mu is held.
func (h *harness[M]) leadersAgree(seen map[string]bool, now time.Duration, inc *incarnation[M], rec lease.Record[M], ok bool) {
	got := inc.leaders
	if got == nil || inc.stopped {
		// Stopped: its Leaders channel ended with the ctx shared with Run,
		// which may still take in a reply (a paused incarnation that was
		// crashed meanwhile): nothing more is reported, by design.
		return
	}
	holder, token := "", fence.Token(0)
	if ok && rec.Holder != "" {
		holder, token = rec.Holder, fence.Token(rec.Token)
	}
	key := inc.id + " leaders"
	switch {
	case got.n == 0 && holder != "":
		h.suspectLocked(seen, key, now, sim.CheckObserver, "%s: Record shows %q (token %d), Leaders reported nothing", inc.id, holder, token)
	case got.n > 0 && (got.holder != holder || got.token != token):
		h.suspectLocked(seen, key, now, sim.CheckObserver, "%s: Record shows %q (token %d), Leaders last reported %q (token %d)", inc.id, holder, token, got.holder, got.token)
	}
}
