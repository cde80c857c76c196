package exhaust

// The bounds the tests run. Each 2-node bound explores every interleaving
// of the events of its horizon, the store applying and answering each
// request within the tick it was sent in (MaxLatency 0: the messages of a
// tick come in any order, and may be lost within the budget; the driver's
// timeout then gives an unknown outcome, and a timed-out swap may still be
// applied later), with one fault (two for the reconfiguration and its cut)
// chosen among those the bound allows, at any instant.

// TestBounds is what `make test` runs (about 75s, single-threaded, on a
// shared 2-core machine: 80-150k states/s).
func TestBounds() []Bound {
	c, c2 := smallConfig(), longConfig()
	return []Bound{
		{Name: "two-nodes-crash-rollback-restore", Nodes: 2, Horizon: 8, Config: c, MaxOrphans: 1,
			Budget: Budget{Crashes: 1, Rollbacks: 1, Restores: 1, Faults: 1}},
		{Name: "two-nodes-forged-short-lease", Nodes: 2, Horizon: 10, Config: c, MaxOrphans: 1,
			Budget: Budget{ForgedShort: 1, Faults: 1}},
		{Name: "two-nodes-reconfigure-cut", Nodes: 2, Horizon: 9, Config: c, Config2: c2, MaxOrphans: 1, MaxCut: 8,
			Budget: Budget{Reconfigs: 1, Cuts: 1, Faults: 2}},
		{Name: "two-nodes-lossy-loss", Nodes: 2, Horizon: 7, Config: c, MaxOrphans: 1, Lossy: true,
			Budget: Budget{DataLosses: 1, Losses: 1, Faults: 1}},
		{Name: "two-nodes-lossy-stop", Nodes: 2, Horizon: 7, Config: c, MaxOrphans: 1, Lossy: true,
			Budget: Budget{DataLosses: 1, Stops: 1, Faults: 2}},
		{Name: "two-nodes-watch", Nodes: 2, Horizon: 3, Config: c, MaxOrphans: 1, Watch: true,
			Budget: Budget{Faults: 1}},
		{Name: "two-nodes-watch-rollback", Nodes: 2, Horizon: 9, Config: c, MaxOrphans: 1, Watch: true, WatchAtTick: true,
			Budget: Budget{Rollbacks: 1, Faults: 1}},
		{Name: "three-nodes", Nodes: 3, Horizon: 4, Config: c, MaxOrphans: 1,
			Budget: Budget{Faults: 1}},
		{Name: "two-nodes-handover", Nodes: 2, Horizon: 8, Config: c, MaxOrphans: 1,
			Budget: Budget{Resigns: 1, Faults: 1}},
	}
}

// LargeBounds is what `make sim` runs (TENURE_EXHAUSTIVE=large): the
// bounds of TestBounds two ticks longer (one for the in-tick watch and
// the three nodes), and a clock stop beside the crash, rollback and
// restore.
func LargeBounds() []Bound {
	var bs []Bound
	for _, b := range TestBounds() {
		b.Name = "large-" + b.Name
		switch {
		case b.Nodes == 3 || b.Watch && !b.WatchAtTick:
			b.Horizon++
		default:
			b.Horizon += 2
		}
		if b.Budget.Crashes > 0 {
			b.Budget.ClockStops, b.MaxStop = 1, 2
		}
		bs = append(bs, b)
	}
	return bs
}
