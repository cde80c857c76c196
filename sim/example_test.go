package sim_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
)

// RunSeed runs one seed of model mode: five nodes, ten simulated minutes,
// the default faults. The same seed always gives the same result.
func ExampleRunSeed() {
	res, err := sim.RunSeed(sim.Options{Seed: 42, Faults: sim.DefaultFaults()})
	if err != nil {
		panic(err)
	}
	fmt.Printf("seed %d: violation %v; %d events, %d terms, %d fenced writes accepted, %d refused\n",
		res.Seed, res.Err(), res.Events, res.Terms, res.FenceAccepted, res.FenceRejected)
	// Output:
	// seed 42: violation <nil>; 5239 events, 8 terms, 288 fenced writes accepted, 1 refused
}

// A run whose clocks drift past what the timings tolerate makes two
// leaders, and the one-leader check says when and who.
func ExampleRunSeed_driftBeyondTheBound() {
	res, _ := sim.RunSeed(sim.Options{Seed: 3, Nodes: 3, Duration: 5 * time.Minute,
		Faults: sim.Faults{DriftBeyond: true, Crash: true, Partition: true}})
	fmt.Println(res.Violation.Check)
	fmt.Println(res.Violation)
	// Output:
	// one-leader
	// 83.036s: one-leader check failed: n1 (token 12776) and n0 (token 83030990) both lead at 83.036s
}

// WriteTimeline draws a recorded run: one lane per node, the terms, the
// store's changes of holder, the faults and the verdict.
func ExampleCluster_WriteTimeline() {
	c, err := sim.New(sim.Options{Seed: 1, Nodes: 2, Duration: time.Minute, Record: true,
		Schedule: []sim.Fault{{At: 20 * time.Second, Kind: sim.FaultCrash, AtLeader: true, Dur: 10 * time.Second}}})
	if err != nil {
		panic(err)
	}
	c.Run()
	if err := c.WriteTimeline(os.Stdout, 60); err != nil {
		panic(err)
	}
	// Output:
	// tenure sim: seed 1, 2 nodes, 1m0s, lossy store false, drift 0.000
	// timings: L=15s R=10s I=2s J=0.10 T=5s; liveness bound 20.121s, handover bound 121ms
	// one column = 1s; F follower, C candidate, L leader, E expiring, blank down; faults row: first letter of the fault
	//
	// time    |0s                 |20s                |40s
	// faults                      c
	// n0      CFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFLLLLLLLLLLLLLLLLLLLLLLL
	// n1      LLLLLLLLLLLLLLLLLLLLL         FFFFFFFFFFFFFFFFFFFFFFFFFFFFFF
	//
	// terms (2):
	//       0.029s  n1 leads with token 26925
	//      37.285s  n0 leads with token 37274834
	//
	// store (writes that change holder or token):
	//       0.027s  rev 1 holder="n1" token=26925 transitions=0 (written by n1)
	//      37.275s  rev 11 holder="n0" token=37274834 transitions=1 (written by n0)
	//
	// faults (1):
	//      20.000s  crash n1 for 10s (new identity: false) [aimed at the leader]
	//
	// checks: OK: every check held (348 events, 2 terms, 23 fenced writes accepted, 0 refused)
}

// Check sweeps seeds from a test and fails it, with the seed, the
// violation, a timeline and the command that replays it, for every seed
// that breaks a check. Here with the timings the service reads from its
// environment (TENURE_<NAME>_* and TENURE_*, as lead.New reads them).
func ExampleCheck() {
	var t *testing.T // the *testing.T of a test function
	env, err := lease.Load("billing-cron", lease.DefaultConfig(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	sim.Check(t, sim.Options{
		Config: env.Config,
		Faults: sim.DefaultFaults(),
		Store:  sim.StoreModel{MayLoseRecords: true}, // Redis without persistence, say
		Seeds:  "1-2000",                             // or a Budget; TENURE_SIM_SEEDS=N replays one
	})
}
