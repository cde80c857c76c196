package sim

import (
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// quietCase is a schedule that attacks followers that stop polling while
// their watch shows renewals.
type quietCase struct {
	name  string
	sched func(cfg lease.Config) []Fault
}

var quietCases = []quietCase{
	{"every watch silent, then the leader crashes", func(lease.Config) []Fault {
		return []Fault{
			{At: 3 * time.Second, Kind: FaultMuteWatch, Mask: 0b111, Dur: 2 * time.Minute},
			{At: 20 * time.Second, Kind: FaultCrash, AtLeader: true},
		}
	}},
	{"one follower's watch silent, the leader crashes, the other follower is paused", func(lease.Config) []Fault {
		return []Fault{
			{At: 3 * time.Second, Kind: FaultMuteWatch, Node: 1, Dur: 2 * time.Minute},
			{At: 3 * time.Second, Kind: FaultMuteWatch, Node: 2, Dur: 2 * time.Minute},
			{At: 20 * time.Second, Kind: FaultCrash, AtLeader: true},
		}
	}},
	{"every watch silent, the leader released and comes back", func(lease.Config) []Fault {
		return []Fault{
			{At: 3 * time.Second, Kind: FaultMuteWatch, Mask: 0b111, Dur: time.Minute},
			{At: 20 * time.Second, Kind: FaultRelease, AtLeader: true, Dur: 5 * time.Second},
		}
	}},
	{"forged renewals of the crashed leader's record, every 100ms, to every node", func(cfg lease.Config) []Fault {
		out := []Fault{{At: 20 * time.Second, Kind: FaultCrash, AtLeader: true}}
		for i := range 600 {
			out = append(out, Fault{At: 10*time.Second + time.Duration(i)*100*time.Millisecond, Kind: FaultForgeWatch,
				Revision: 1<<40 + lease.Revision(i), Mask: 0b111})
		}
		return out
	}},
	{"forged renewals and a silent watch", func(cfg lease.Config) []Fault {
		out := []Fault{
			{At: 3 * time.Second, Kind: FaultMuteWatch, Mask: 0b111, Dur: 2 * time.Minute},
			{At: 20 * time.Second, Kind: FaultCrash, AtLeader: true},
		}
		for i := range 300 {
			out = append(out, Fault{At: 15*time.Second + time.Duration(i)*cfg.RetryInterval/2, Kind: FaultForgeWatch,
				Revision: 1<<40 + lease.Revision(i), Mask: 0b110})
		}
		return out
	}},
}

// TestSimQuietFollowers: a follower that stops polling while its watch
// shows renewals still sees a leader appear within the liveness bound when
// the watch silently stops delivering (for one node or all), and forged
// renewals delay a leader by at most renewalForgeryExtra (a lease and a
// round trip), on the timings and on the defaults.
func TestSimQuietFollowers(t *testing.T) {
	for _, cfg := range []lease.Config{shortConfig(), lease.DefaultConfig()} {
		for _, c := range quietCases {
			t.Run(c.name+"/L="+cfg.LeaseDuration.String(), func(t *testing.T) {
				for seed := uint64(1); seed <= 10; seed++ {
					res, err := RunSeed(Options{Seed: seed, Nodes: 3, Config: cfg, Duration: 3 * time.Minute, Schedule: c.sched(cfg)})
					if err != nil {
						t.Fatal(err)
					}
					if res.Violation != nil {
						t.Fatalf("seed %d: %v", seed, res.Violation)
					}
					if res.Terms < 2 {
						t.Fatalf("seed %d: %d terms: nobody took over", seed, res.Terms)
					}
				}
			})
		}
	}
}
