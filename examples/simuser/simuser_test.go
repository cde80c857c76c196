package simuser

import (
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim"
	"github.com/tenure-go/tenure/sim/simtest"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/storetest"
)

// Meta is what the electors of this service attach to the lease.
type Meta struct {
	Addr string
}

// MapStore keeps the store contract: the conformance suite says so first.
func TestMapStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] { return NewMapStore[storetest.Meta]() })
}

// Model mode: the state machine under the default faults, with the
// timings this service uses, on a store that may lose records.
func TestModelUnderDefaultFaultsKeepsEveryCheck(t *testing.T) {
	sim.Check(t, sim.Options{
		Config: timings(),
		Faults: sim.DefaultFaults(),
		Store:  sim.StoreModel{MayLoseRecords: true},
		Seeds:  "1-300",
	})
}

// Runtime mode on memstore, with data loss (memstore has Delete).
func TestRuntimeMemstore(t *testing.T) {
	f := sim.DefaultFaults()
	f.DataLoss = true
	simtest.Check(t, simtest.Options[Meta]{
		Config: timings(),
		Faults: f,
		Seeds:  "1-15",
	})
}

// Runtime mode on MapStore, which has no Watch: the electors poll.
func TestRuntimeMapStore(t *testing.T) {
	simtest.Check(t, simtest.Options[Meta]{
		Config:   timings(),
		NewStore: func() store.Store[Meta] { return NewMapStore[Meta]() },
		Faults:   sim.DefaultFaults(),
		Seeds:    "1-15",
	})
}

// Runtime mode finds the bug of a store that forgets to compare revisions:
// BadMapStore's CompareAndSwap writes whatever the revision.
func TestRuntimeFindsABrokenStore(t *testing.T) {
	var failed *simtest.Result
	for seed := uint64(1); seed <= 10 && failed == nil; seed++ {
		res, err := simtest.Run(t, simtest.Options[Meta]{
			Seed:     seed,
			NewStore: func() store.Store[Meta] { return badMapStore[Meta]{NewMapStore[Meta]()} },
			Faults:   sim.DefaultFaults(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation != nil {
			failed = &res
		}
	}
	if failed == nil {
		t.Fatal("a store that ignores the expected revision passed 10 seeds")
	}
	t.Logf("seed %d: %v", failed.Seed, failed.Violation)
}

// timings are the service's own (in production: lease.Load from the
// environment).
func timings() lease.Config {
	return lease.Config{
		LeaseDuration:  6 * time.Second,
		RenewDeadline:  4 * time.Second,
		RetryInterval:  time.Second,
		RetryJitter:    0.2,
		BackendTimeout: 2 * time.Second,
		ErrorInterval:  30 * time.Second,
	}
}
