package rt

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/internal/draw"
)

// drawSchedule draws a fault schedule from r: faults start between 5s and
// 20s, then every 5s to 40s, in the first 80% of the run, so that the rest
// is calm and liveness is checked. Half of the faults that hit one node
// are aimed at whichever node leads when they start; half of the data
// losses come with a process that restarts just after them.
func drawSchedule[M any](r *rand.Rand, o Options[M], lossy bool) []sim.Fault {
	f := o.Faults
	var kinds []sim.FaultKind
	add := func(on bool, k sim.FaultKind) {
		if on {
			kinds = append(kinds, k)
		}
	}
	add(f.Crash, sim.FaultCrash)
	add(f.Pause, sim.FaultPause)
	add(f.Partition, sim.FaultPartition)
	add(f.Loss, sim.FaultLoss)
	add(f.Slow, sim.FaultSlow)
	add(f.DataLoss, sim.FaultDataLoss)
	add(f.Release, sim.FaultRelease)
	add(f.Reconfigure, sim.FaultReconfigure)
	add(f.MuteWatch, sim.FaultMuteWatch)
	add(f.Resign, sim.FaultResign)
	add(f.HandOver, sim.FaultHandOver)
	out := []sim.Fault{}
	if len(kinds) == 0 {
		return out
	}
	cfg := o.Config
	l := cfg.LeaseDuration
	end := o.Duration * 8 / 10
	for t := uniform(r, 5*time.Second, 20*time.Second); t < end; t += uniform(r, 5*time.Second, 40*time.Second) {
		fl := sim.Fault{At: t, Kind: kinds[r.IntN(len(kinds))], Node: r.IntN(o.Nodes)}
		fl.AtLeader = fl.Kind.Aimed() && r.IntN(2) == 0
		switch fl.Kind {
		case sim.FaultCrash:
			fl.Dur = uniform(r, time.Second, 3*l)
			fl.NewIdentity = r.IntN(2) == 0
		case sim.FaultPause:
			fl.Dur = uniform(r, l/2, 3*l)
		case sim.FaultPartition:
			fl.Dur = uniform(r, time.Second, 3*l)
			switch r.IntN(3) {
			case 0:
				fl.Requests = true
			case 1:
				fl.Responses = true
			default:
				fl.Requests, fl.Responses = true, true
			}
		case sim.FaultLoss:
			fl.Prob = 0.1 + 0.6*r.Float64()
			fl.Dur = uniform(r, time.Second, 2*l)
		case sim.FaultSlow:
			bt := cfg.BackendTimeout
			fl.Latency = uniform(r, bt, 2*bt)
			fl.Dur = uniform(r, time.Second, 2*l)
		case sim.FaultRelease:
			fl.Dur = uniform(r, time.Second, 2*l)
		case sim.FaultResign:
			fl.AtLeader = true
		case sim.FaultHandOver:
			fl.AtLeader, fl.Successor = true, fmt.Sprintf("n%d", r.IntN(o.Nodes+1))
			if r.IntN(2) == 0 {
				// The caller gives up (HandOver's ctx ends) while the
				// handover may still be under way: it goes on without it.
				fl.Dur = uniform(r, cfg.RetryInterval/10, cfg.RenewDeadline)
			}
		case sim.FaultReconfigure:
			rho := 0.0
			if f.Drift {
				rho = o.Rho // every config used must tolerate the drift
			}
			fl.Config = draw.Config(r, cfg, lossy, rho)
		case sim.FaultMuteWatch:
			fl.Dur = uniform(r, time.Second, 6*l)
			if r.IntN(2) == 0 {
				fl.Mask = 1<<o.Nodes - 1 // every node's watch
			}
		case sim.FaultDataLoss:
			if f.Crash && r.IntN(2) == 0 {
				// A process that remembers nothing starts just after the
				// loss (a deploy that restarts Redis and a pod): only the
				// store's token floor keeps its first token fresh.
				out = append(out, sim.Fault{At: t - time.Second, Kind: sim.FaultCrash, Node: r.IntN(o.Nodes),
					Dur: time.Second + uniform(r, 0, 20*time.Millisecond), NewIdentity: r.IntN(2) == 0})
			}
		}
		out = append(out, fl)
	}
	return out
}
