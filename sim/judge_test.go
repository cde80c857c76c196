package sim

import "testing"

// The one-leader and token verdicts rest on the recorded history alone:
// with every Report of the machines hidden from the checks, the
// adversary's schedules give the same verdicts, where those checks are
// concerned, as with them.
func TestSimJudgeIgnoresReports(t *testing.T) {
	n := uint64(300)
	if raceOn {
		n = 40
	}
	compared := 0
	for seed := uint64(1); seed <= n; seed++ {
		o := advSweepOptions(seed)
		with, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		o.hideReports = true
		without, err := RunSeed(o)
		if err != nil {
			t.Fatal(err)
		}
		if safety(with) != safety(without) {
			t.Errorf("seed %d: with reports %v; without %v", seed, with.Violation, without.Violation)
		}
		if with.Violation == nil && without.Violation == nil {
			compared++
		}
	}
	if compared < int(n)*9/10 {
		t.Errorf("only %d of %d schedules ran to the end both ways", compared, n)
	}
}

// safety is a run's one-leader or token violation, if it had one.
func safety(r Result) string {
	if v := r.Violation; v != nil && (v.Check == CheckOneLeader || v.Check == CheckTokens) {
		return v.Check + ": " + v.Msg
	}
	return ""
}
