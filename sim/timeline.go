package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/sim/internal/picture"
	"github.com/tenure-go/tenure/sim/internal/timeline"
)

// fmtTime formats a real time as seconds with millisecond precision.
func fmtTime(t int64) string { return timeline.FmtTime(t) }

// stateMark is how a timeline lane shows a machine's state.
func stateMark(s fsm.State) timeline.Mark {
	switch s {
	case fsm.Candidate:
		return timeline.Candidate
	case fsm.Leader:
		return timeline.Leader
	case fsm.Expiring:
		return timeline.Expiring
	}
	return timeline.Follower
}

// faultMark is how a timeline shows a fault: on the lane of the node it
// hits, or (node -1) across every lane for a fault of the store, the
// network or several nodes.
func faultMark(at int64, f Fault) timeline.Fault {
	node := f.Node
	switch f.Kind {
	case FaultLoss, FaultSlow, FaultDataLoss, FaultDataSwap, FaultResend,
		FaultForge, FaultForgeWatch, FaultForgeRelease, FaultRollback, FaultRestore, FaultJitter:
		node = -1
	case FaultMuteWatch:
		if f.Mask != 0 {
			node = -1
		}
	case FaultRelease:
		if f.Window > 0 {
			node = -1 // it waits for whoever creates next
		}
	}
	return timeline.Fault{At: at, Dur: int64(f.Dur), Node: node, Letter: f.Kind.String()[0], Kind: f.Kind.String(), Text: f.text()}
}

// storeText describes a write of the store for the timeline.
func storeText(rev lease.Revision, l fsm.Lease, by string) string {
	return fmt.Sprintf("rev %d holder=%q token=%d transitions=%d (written by %s)", rev, l.Holder, l.Token, l.Transitions, by)
}

// closeTimeline ends the recorded timeline: its length, lanes, header and
// verdict.
func (s *Cluster) closeTimeline() {
	tl := s.tl
	tl.End = int64(s.opt.Duration)
	if s.res.Violation != nil {
		tl.End = s.now
	}
	tl.IDs, tl.Rates = tl.IDs[:0], tl.Rates[:0]
	for _, n := range s.nodes {
		tl.IDs, tl.Rates = append(tl.IDs, n.id), append(tl.Rates, n.rate)
	}
	o := s.opt
	c := o.Config
	tl.Header = []string{
		fmt.Sprintf("tenure sim: seed %d, %d nodes, %v, lossy store %v, drift %.3f", o.Seed, o.Nodes, o.Duration, s.lossy, s.rho),
		fmt.Sprintf("timings: L=%v R=%v I=%v J=%.2f T=%v; liveness bound %v, handover bound %v",
			c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.RetryJitter, c.BackendTimeout,
			time.Duration(s.chk.bound), time.Duration(s.chk.handoverIn)),
	}
	if v := s.res.Violation; v != nil {
		tl.Verdict, tl.Failed, tl.FailAt = "VIOLATION "+v.Error(), true, int64(v.At)
	} else {
		tl.Verdict = fmt.Sprintf("OK: every check held (%d events, %d terms, %d fenced writes accepted, %d refused)",
			s.res.Events, s.res.Terms, s.res.FenceAccepted, s.res.FenceRejected)
	}
}

// WriteTimeline writes a recorded run as text, width columns wide (at
// least 20): the options, a time axis, a fault row, one lane per node (F
// follower, C candidate, L leader, E expiring; blank while down), then the
// terms, the store's changes of holder, the faults and the verdict of the
// checks. The run must have been made with Options.Record (else the error
// wraps ErrNotRecorded) and have ended.
func (s *Cluster) WriteTimeline(w io.Writer, width int) error {
	if s.tl == nil {
		return ErrNotRecorded
	}
	if width < 20 {
		return fmt.Errorf("sim: timeline width %d, must be at least 20", width)
	}
	return s.tl.WriteText(w, width)
}

// WriteSVG writes a recorded run as an SVG timeline: one swimlane per node
// coloured by state (grey follower, yellow candidate, green leader, orange
// expiring, blank down), each term's token at its start, faults shaded red
// (on a node's lane, or across all lanes for store faults) and the checks'
// verdict below. The run must have been made with Options.Record (else the
// error wraps ErrNotRecorded).
func (s *Cluster) WriteSVG(w io.Writer) error {
	if s.tl == nil {
		return ErrNotRecorded
	}
	return s.tl.WriteSVG(w)
}

// WriteHTML writes a recorded run as one self-contained HTML page (inline
// SVG and a few lines of script to zoom; nothing fetched): a lane per node
// coloured by state with each term's token, the faults where they hit, a
// lane of the store's writes (who wrote which revision; accepted above,
// conflicting below) and its changes of holder, losses, rollbacks and
// restores, and the checks' verdict marked at its instant. At a violation
// a red line crosses every lane and the spans that lead at that instant
// are outlined, their overlap shaded. Its size is bounded whatever the
// run's length: a lane draws at most 1201 spans (shorter ones merge), the
// store lane at most 1200 marks of each kind, and at most 500 faults. The
// run must have been made with Options.Record (else the error wraps
// ErrNotRecorded) and have ended.
func (s *Cluster) WriteHTML(w io.Writer) error {
	if s.tl == nil {
		return ErrNotRecorded
	}
	return picture.Write(w, s.tl)
}
