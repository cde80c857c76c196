package lead_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
)

// A record written by hand with a lease far longer than the electors',
// then deleted, keeps the election leaderless for that lease: its holder
// might still believe it leads. The wait is visible: in a lossy store Err
// wraps ErrLongWait, names the wait and how to end it, and the electors
// log it at Warn with the election's name; in a store that keeps its
// records the deletion is a rollback, which Err and the log report with
// the same wait.
func TestForgedLongLeaseWaitIsReported(t *testing.T) {
	for _, lossy := range []bool{false, true} {
		t.Run(fmt.Sprintf("lossy=%v", lossy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := shortLeaseConfig()
				h := newHostile(lossy, 5000)
				f := startFleet(t, h, 3)
				if first := f.next(t); first.Kind != lead.Started {
					t.Fatalf("first change %+v", first)
				}
				settle(time.Second)
				rec, _ := h.current(t)
				const forged = 5 * time.Minute
				h.mu.Lock()
				h.write(lease.Record[meta]{Holder: "mallory", Token: rec.Token + 1, LeaseDuration: forged, Transitions: rec.Transitions + 1})
				h.mu.Unlock()
				if c := f.next(t); c.Kind != lead.Stopped {
					t.Fatalf("after the forged record: %+v, want the leader to step down", c)
				}
				settle(cfg.MaxRetryInterval())
				h.mem.Delete("job")
				settle(2 * cfg.LeaseDuration)
				for i, n := range f.nodes {
					err := n.e.Err()
					switch {
					case lossy && !errors.Is(err, lead.ErrLongWait):
						t.Errorf("%s: Err() = %v, want ErrLongWait", n.e.Identity(), err)
					case !lossy && !errors.Is(err, lead.ErrRevisionRollback):
						t.Errorf("%s: Err() = %v, want ErrRevisionRollback", n.e.Identity(), err)
					case err != nil && !strings.Contains(err.Error(), forged.String()):
						t.Errorf("%s: Err() = %v, which does not name the wait %v", n.e.Identity(), err, forged)
					}
					got, e := f.logs[i].count(slog.LevelWarn, "waiting longer than this elector's LeaseDuration for a longer lease seen in the store")
					if got == 0 || e.attrs["name"] != "job" || e.attrs["wait"] == nil {
						t.Errorf("%s logged the long wait %d times (%v), want at Warn with the name and the wait", n.e.Identity(), got, e.attrs)
					}
				}
				f.none(t, "while the forged lease is waited out")
				c := f.next(t)
				if c.Kind != lead.Started {
					t.Fatalf("after the forged lease: %+v, want a new term", c)
				}
				// The new leader has nothing to report. (A follower that
				// saw the long lease may still wait it out, and say so,
				// should this leader vanish in a lossy store.)
				for _, n := range f.nodes {
					if n.e.Identity() == c.Term.Identity {
						if err := n.e.Err(); err != nil {
							t.Errorf("%s: Err() = %v once it leads", n.e.Identity(), err)
						}
					}
				}
			})
		})
	}
}
