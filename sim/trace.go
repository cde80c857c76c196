package sim

import (
	"fmt"

	"github.com/tenure-go/tenure/fsm"
)

// tracing reports whether a trace is written; hot paths check it before
// building arguments.
func (s *Cluster) tracing() bool { return s.opt.Trace != nil }

// tracef writes one trace line: the real time, the node (or the store when
// node is -1), the message.
func (s *Cluster) tracef(node int, format string, args ...any) {
	if s.opt.Trace == nil {
		return
	}
	b := s.buf[:0]
	b = fmt.Appendf(b, "%12s ", fmtTime(s.now))
	if node < 0 {
		b = append(b, "store "...)
	} else {
		b = fmt.Appendf(b, "%-5s ", s.nodes[node].id)
	}
	b = fmt.Appendf(b, format, args...)
	b = append(b, '\n')
	s.buf = b
	s.opt.Trace.Write(b) //nolint:errcheck // a trace is best effort
}

// traceStep writes one machine step: its event, state change and actions.
func (s *Cluster) traceStep(n *node, ev fsm.Event, acts []fsm.Action, before, after fsm.State) {
	msg := fmt.Sprintf("%v@%v %c→%c", ev.Kind, ev.Now, before.String()[0], after.String()[0])
	switch ev.Kind {
	case fsm.ReadDone, fsm.Watched, fsm.SwapDone, fsm.SwapConflict:
		if ev.Absent {
			msg += " absent"
		} else {
			msg += fmt.Sprintf(" rev=%d holder=%q token=%d", ev.Revision, ev.Lease.Holder, ev.Lease.Token)
		}
	}
	for _, a := range acts {
		switch a.Kind {
		case fsm.Swap:
			msg += fmt.Sprintf(" | %v(exp=%d holder=%q token=%d)", a.Swap, a.Expected, a.Next.Holder, a.Next.Token)
		case fsm.StartedLeading:
			msg += fmt.Sprintf(" | STARTED token=%d", a.Token)
		case fsm.StoppedLeading:
			msg += fmt.Sprintf(" | STOPPED token=%d (%v)", a.Token, a.Reason)
		default:
			msg += " | " + a.Kind.String()
		}
	}
	s.tracef(n.idx, "%s", msg)
}
