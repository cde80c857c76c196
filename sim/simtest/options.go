package simtest

import (
	"github.com/tenure-go/tenure/sim/internal/rt"
)

// Options configure a runtime-mode simulation (Run, Check). M is the
// metadata type of the store under test. They are realtime.Options, whose
// Speed a bubble ignores; Seeds, Budget and SVGDir are for Check only:
//
//   - Seed draws everything random (Check runs the seeds of Seeds
//     instead); Nodes (default 3, at most 16), Duration (the virtual time
//     a run lasts, default 3 minutes), Name (default "sim") and Config
//     (default lease.DefaultConfig()) are the election's.
//   - NewStore returns a fresh, empty store for one seed (default
//     memstore.New). Check calls it concurrently, once per seed: each call
//     must return a store of its own that shares no records with another
//     call's. It is called inside the synctest bubble, so it must not wait
//     on the network. For Faults.DataLoss the store needs a method
//     Delete(name string), as memstore has.
//   - Latency, Faults, Rho, BeyondRho and Schedule shape the faults;
//     CheckEvery is how often the checks look (default 100ms); Trace
//     receives one line per event.
//   - Seeds (sim.ParseSeeds; TENURE_SIM_SEEDS overrides it), Budget (how
//     long to keep starting seeds when Seeds is empty, default
//     sim.DefaultBudget) and SVGDir (where failing seeds' timelines go)
//     drive Check.
type Options[M any] = rt.Options[M]

// Result sums up one runtime-mode run: its seed, the terms, store
// operations and fenced writes it saw, the elector-time it simulated, the
// fault schedule that ran and the first failed check (Violation), if any.
// Its methods Err, WriteTimeline (one lane per elector: L while its
// observers say it leads, F otherwise, blank while down; the terms, the
// store's changes of holder, the faults and the verdict), WriteSVG and
// WriteHTML (a self-contained page, as sim.Cluster.WriteHTML's) render
// it. Lag and Tolerance are zero: a bubble's checks need no
// tolerance.
type Result = rt.Result
