package sim

import (
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/lease"
)

// evKind says what a simulated event is.
type evKind uint8

const (
	evTimer      evKind = iota + 1 // a node's timer fires (Tick)
	evTimeout                      // a node's BackendTimeout for an op expires
	evStoreReq                     // a request reaches the store
	evReply                        // a store reply reaches a node
	evWatch                        // a watch event reaches a node
	evWork                         // a leader decides to write to the fenced resource
	evFenceWrite                   // a fenced write reaches the resource
	evFault                        // a fault of the schedule starts
	evFaultEnd                     // a fault with a duration ends
	evCheck                        // the periodic liveness check
	evHandover                     // the deadline of a release's handover
	evAdv                          // a step of a targeted fault (targeted.go)
)

// opKind is a store operation.
type opKind uint8

const (
	opRead opKind = iota + 1
	opSwap
)

// result is a store operation's outcome.
type result uint8

const (
	resDone result = iota + 1
	resConflict
	resFailed  // the store refused to write: a token or Transitions past lease.MaxToken
	resCorrupt // the store holds a record it cannot read (ErrCorruptRecord); on a watch event: it changed into one
)

// simEvent is one entry of the event queue. It is a plain value: pushing and
// popping do not allocate.
type simEvent struct {
	at   int64  // real time
	seq  uint64 // tie breaker: order of pushing
	orig int64  // the time first scheduled (a pause may move at)
	kind evKind
	node int32
	gen  uint32 // the node's incarnation
	op   uint32 // the node's op id
	snap uint32 // on a swap: its index in Cluster.snaps (judge.go)
	// Store operations and their replies.
	opKind   opKind
	result   result
	expected lease.Revision
	lease    fsm.Lease
	rev      lease.Revision
	absent   bool
	stamp    uint64 // the record's stamp (StoreModel.Stamped)
	// The store's marker (StoreModel.CreateGate): on a swap, the
	// identity the node saw last and how long, by its clock, it has seen
	// it; on a reply, the store's current identity.
	markerID  uint64
	markerAge time.Duration
	vouched   bool // on a create's reply: the store vouched for it
	// A guarded swap (StoreModel.GuardedRelease): it writes only over
	// was, released, at expected.
	guarded bool
	was     fsm.Lease
	// Fenced writes and handovers.
	token uint64
	count int // terms (handover) or index of the fault
}

// eventHeap is a binary min-heap ordered by (at, seq).
type eventHeap []simEvent

func (h eventHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}

func (h *eventHeap) push(ev simEvent) {
	*h = append(*h, ev)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *eventHeap) pop() simEvent {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = simEvent{}
	q = q[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, m) {
			m = l
		}
		if r < len(q) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}
