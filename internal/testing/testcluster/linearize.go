package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// The linearizability checker: a History records every Get and
// CompareAndSwap that electors make through RecordStore, with invocation
// and completion times, and Check runs porcupine over it against StoreModel,
// a model of the contract of store.Store.

// OpKind is the kind of a recorded store operation.
type OpKind uint8

// The kinds of operation.
const (
	OpGet OpKind = iota + 1
	OpCAS
	// OpLose is the store losing its data (a Redis restart without
	// persistence), recorded by whoever kills the server: between the
	// kill and the restart the record vanishes.
	OpLose
)

func (k OpKind) String() string {
	switch k {
	case OpGet:
		return "get"
	case OpCAS:
		return "cas"
	case OpLose:
		return "lose"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Outcome is how a recorded operation ended.
type Outcome uint8

// The outcomes.
const (
	// OutOK: the read found a record, or the swap was stored.
	OutOK Outcome = iota + 1
	// OutNotFound: the read found no record.
	OutNotFound
	// OutConflict: the swap was refused; the output holds what it found.
	OutConflict
	// OutUnknown: the operation failed in a way that leaves its effect
	// unknown (a timeout, a cut connection): it may or may not have
	// happened, at any time after its invocation.
	OutUnknown
)

func (o Outcome) String() string {
	return [...]string{"?", "ok", "notfound", "conflict", "unknown"}[min(int(o), 4)]
}

// RecView is the part of a lease record the model compares: the metadata
// and the wall-clock times are left out (stores may round the times).
type RecView struct {
	Holder        string
	Token         uint64
	Transitions   uint64
	LeaseDuration time.Duration
}

func viewOf[M any](r lease.Record[M]) RecView {
	return RecView{Holder: r.Holder, Token: r.Token, Transitions: r.Transitions, LeaseDuration: r.LeaseDuration}
}

// OpInput is the input of a recorded operation.
type OpInput struct {
	Kind     OpKind
	Expected lease.Revision // of a swap
	Next     RecView        // of a swap
	// Guarded: the swap writes only over Was at Expected (a released
	// record: store.ReleaseGuard).
	Guarded bool
	Was     RecView
}

// OpOutput is the output of a recorded operation.
type OpOutput struct {
	Outcome Outcome
	Rec     RecView
	Rev     lease.Revision
}

// History is the record of the store operations of one election, from any
// number of clients. It is safe for concurrent use.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// errs counts the errors that made outcomes unknown, by message; see
	// Errors.
	errs    map[string]int
	watches []*watchLog
}

// NewHistory returns an empty history whose times count from now.
func NewHistory() *History { return &History{start: time.Now(), errs: map[string]int{}} }

// now is the time since the history started, in nanoseconds.
func (h *History) now() int64 { return int64(time.Since(h.start)) }

// Since returns t as a time of the history.
func (h *History) Since(t time.Time) int64 { return int64(t.Sub(h.start)) }

// FirstAnswer returns when the first operation that returned after t with
// an answer (a record, none, a conflict: not an unknown outcome) returned:
// when the store could be reached again after a fault healed at t. ok is
// false if none did.
func (h *History) FirstAnswer(t time.Time) (at time.Time, ok bool) {
	from := h.Since(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	first := int64(math.MaxInt64)
	for _, op := range h.ops {
		if op.Output.(OpOutput).Outcome != OutUnknown && op.Return > from && op.Return < first {
			first = op.Return
		}
	}
	if first == math.MaxInt64 {
		return time.Time{}, false
	}
	return h.start.Add(time.Duration(first)), true
}

func (h *History) add(client int, in OpInput, out OpOutput, call, ret int64) {
	if out.Outcome == OutUnknown {
		// It may take effect at any time after its call: it never
		// returned.
		ret = math.MaxInt64
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	h.mu.Unlock()
}

// Lose records that the store lost its data at some time between from and
// to (the kill and the end of the restart).
func (h *History) Lose(from, to time.Time) {
	h.add(-1, OpInput{Kind: OpLose}, OpOutput{Outcome: OutOK}, h.Since(from), h.Since(to))
}

// Len is the number of operations recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

// Counts returns the number of recorded operations by kind and outcome,
// as "get/ok" and so on.
func (h *History) Counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]int{}
	for _, op := range h.ops {
		in, out := op.Input.(OpInput), op.Output.(OpOutput)
		m[in.Kind.String()+"/"+out.Outcome.String()]++
	}
	return m
}

// Errors returns the errors that made outcomes unknown, by message, with
// their counts.
func (h *History) Errors() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[string]int, len(h.errs))
	for k, v := range h.errs {
		m[k] = v
	}
	return m
}

// Check checks that the history is linearizable under StoreModel within
// timeout. It returns porcupine.Ok, porcupine.Illegal or porcupine.Unknown
// (the search ran out of time), and on Illegal a description of the
// longest linearizable prefixes found.
func (h *History) Check(timeout time.Duration) (porcupine.CheckResult, string) {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	for i := range ops {
		if ops[i].ClientId < 0 {
			ops[i].ClientId = 0 // only porcupine's pictures use it
		}
	}
	boundUnknown(ops)
	res, info := porcupine.CheckOperationsVerbose(StoreModel, ops, timeout)
	if res != porcupine.Illegal {
		return res, ""
	}
	var b strings.Builder
	for _, part := range info.PartialLinearizationsOperations() {
		// The longest partial linearization shows how far it got.
		var best []porcupine.Operation
		for _, lin := range part {
			if len(lin) > len(best) {
				best = lin
			}
		}
		start := max(0, len(best)-15)
		fmt.Fprintf(&b, "longest linearizable prefix (%d of %d operations), its last steps:\n", len(best), len(ops))
		for _, op := range best[start:] {
			fmt.Fprintf(&b, "  %s\n", describeOp(op))
		}
	}
	// The operations around the end of that prefix, by call time.
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	fmt.Fprintf(&b, "all %d operations are in the history; the first 5 by call time:\n", len(ops))
	for _, op := range ops[:min(5, len(ops))] {
		fmt.Fprintf(&b, "  %s\n", describeOp(op))
	}
	return res, b.String()
}

// boundUnknown gives each swap of unknown outcome that expected a revision
// X > 0 a return time: the first return of an operation that saw a revision
// above X. Revisions only grow and are never reused (the model checks it),
// so from then on the stored revision is never X again and the swap can no
// longer take effect: linearized later, it is a no-op, which the model
// allows anywhere. Without it every unknown outcome stays open to the end
// of the history and the search explodes. Swaps that expected no record
// (0) stay open: after a Lose the record may be absent again.
func boundUnknown(ops []porcupine.Operation) {
	type seen struct {
		rev lease.Revision
		ret int64
	}
	var obs []seen
	for _, op := range ops {
		out := op.Output.(OpOutput)
		if (out.Outcome == OutOK || out.Outcome == OutConflict) && out.Rev > 0 {
			obs = append(obs, seen{out.Rev, op.Return})
		}
	}
	// By revision, descending; firstRet[i] is the earliest return among
	// obs[:i+1], the observations of revisions at least obs[i].rev.
	sort.Slice(obs, func(i, j int) bool { return obs[i].rev > obs[j].rev })
	firstRet := make([]int64, len(obs))
	for i, o := range obs {
		firstRet[i] = o.ret
		if i > 0 {
			firstRet[i] = min(firstRet[i], firstRet[i-1])
		}
	}
	for i, op := range ops {
		in, out := op.Input.(OpInput), op.Output.(OpOutput)
		if in.Kind != OpCAS || out.Outcome != OutUnknown || in.Expected == 0 {
			continue
		}
		// The observations of revisions above Expected: obs[:n].
		n := sort.Search(len(obs), func(k int) bool { return obs[k].rev <= in.Expected })
		if n == 0 {
			continue
		}
		ops[i].Return = max(firstRet[n-1], op.Call+1)
	}
}

// Dump describes every operation, by call time, for a failure report.
func (h *History) Dump() string {
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "%s\n", describeOp(op))
	}
	return b.String()
}

func describeOp(op porcupine.Operation) string {
	ret := "never"
	if op.Return != math.MaxInt64 {
		ret = time.Duration(op.Return).String()
	}
	return fmt.Sprintf("[%v → %s] client %d: %s", time.Duration(op.Call), ret, op.ClientId,
		StoreModel.DescribeOperation(op.Input, op.Output))
}

// ModelState is the state of StoreModel: what the store holds.
type ModelState struct {
	Exists bool
	Rec    RecView
	// Rev is the record's revision; zero while unknown (a swap whose
	// outcome is unknown was linearized here: its revision is whatever
	// the store chose, above Floor).
	Rev lease.Revision
	// Proposed: Rec is what an unknown swap proposed, not what the store
	// returned, and the store may have raised its token.
	Proposed bool
	// Floor is the highest revision the name is known to have had:
	// revisions are never reused, not even after the store loses its data.
	Floor lease.Revision
}

// matches reports whether a record rec at revision rev, seen by a read or
// returned by a conflict, is the state's record.
func (s ModelState) matches(rec RecView, rev lease.Revision) bool {
	if !s.Exists {
		return false
	}
	if s.Rev != 0 && rev != s.Rev {
		return false
	}
	if s.Rev == 0 && rev <= s.Floor {
		return false
	}
	if s.Proposed {
		return rec.Holder == s.Rec.Holder && rec.Token >= s.Rec.Token
	}
	return rec == s.Rec
}

// mayBe reports whether the state's record may be was (a guarded swap's
// guard): exactly, or, when it is what an unknown swap proposed, as far as
// the token the store may have raised lets one tell.
func (s ModelState) mayBe(was RecView) bool {
	if !s.Exists {
		return false
	}
	if s.Proposed {
		return s.Rec.Holder == was.Holder && s.Rec.Transitions == was.Transitions &&
			s.Rec.LeaseDuration == was.LeaseDuration && was.Token >= s.Rec.Token
	}
	return s.Rec == was
}

// bind is the state once a read showed the record rec at revision rev.
func (s ModelState) bind(rec RecView, rev lease.Revision) ModelState {
	return ModelState{Exists: true, Rec: rec, Rev: rev, Floor: max(s.Floor, rev)}
}

// StoreModel is the store contract as a porcupine model, over OpInput and
// OpOutput and ModelState:
//
//   - Get returns the record and its revision, or not found when there is
//     none;
//   - CompareAndSwap(expected, next) stores next (its token possibly
//     raised) at a revision above every revision the name has had, if the
//     stored revision is expected (zero: no record); otherwise it conflicts
//     and returns the current record and revision (zero when absent);
//   - a guarded swap (CompareReleasedAndSwap) stores next only if, in
//     addition, the record at expected is the released one it names;
//     otherwise it conflicts, at the expected revision too;
//   - an unknown outcome may have taken effect or not;
//   - a Lose empties the store but keeps revisions from going back.
var StoreModel = storeModel.ToModel()

var storeModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{ModelState{}} },
	Step: func(state, input, output any) []any {
		ok, next := step(state, input, output)
		switch {
		case !ok:
			return nil
		case next == nil:
			// An unknown swap linearized here: it took effect, or not.
			s, in := state.(ModelState), input.(OpInput)
			return []any{s, ModelState{Exists: true, Rec: in.Next, Proposed: true, Floor: max(s.Floor, s.Rev, in.Expected)}}
		}
		return []any{next}
	},
	Equal: func(a, b any) bool { return a.(ModelState) == b.(ModelState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(OpInput), output.(OpOutput)
		switch in.Kind {
		case OpLose:
			return "lose all data"
		case OpGet:
			return fmt.Sprintf("get → %v %+v rev %d", out.Outcome, out.Rec, out.Rev)
		case OpCAS:
			if in.Guarded {
				return fmt.Sprintf("guarded cas(expect %d %+v, %+v) → %v %+v rev %d", in.Expected, in.Was, in.Next, out.Outcome, out.Rec, out.Rev)
			}
			return fmt.Sprintf("cas(expect %d, %+v) → %v %+v rev %d", in.Expected, in.Next, out.Outcome, out.Rec, out.Rev)
		}
		return "?"
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(ModelState)) },
}

// step is StoreModel's step with one outcome; a nil state with true is an
// unknown swap that may have taken effect.
func step(state, input, output any) (bool, any) {
	s, in, out := state.(ModelState), input.(OpInput), output.(OpOutput)
	switch in.Kind {
	case OpLose:
		return true, ModelState{Floor: max(s.Floor, s.Rev)}
	case OpGet:
		switch out.Outcome {
		case OutNotFound:
			return !s.Exists, s
		case OutOK:
			if !s.matches(out.Rec, out.Rev) {
				return false, s
			}
			return true, s.bind(out.Rec, out.Rev)
		default:
			return true, s // a failed read changes nothing
		}
	case OpCAS:
		// Could the stored revision be the expected one?
		var mayMatch bool
		switch {
		case in.Expected == 0:
			mayMatch = !s.Exists
		case s.Rev != 0:
			mayMatch = s.Exists && s.Rev == in.Expected
		default:
			mayMatch = s.Exists && in.Expected > s.Floor
		}
		if in.Guarded {
			mayMatch = mayMatch && in.Expected != 0 && s.mayBe(in.Was)
		}
		floor := max(s.Floor, s.Rev, in.Expected)
		switch out.Outcome {
		case OutOK:
			if !mayMatch || out.Rev <= floor || out.Rec.Holder != in.Next.Holder || out.Rec.Token < in.Next.Token {
				return false, s
			}
			return true, ModelState{Exists: true, Rec: out.Rec, Rev: out.Rev, Floor: out.Rev}
		case OutConflict:
			if out.Rev == 0 {
				return (in.Expected != 0 || in.Guarded) && !s.Exists, s
			}
			// At the expected revision only a guard refuses, and only a
			// record other than the one it names.
			if out.Rev == in.Expected && (!in.Guarded || out.Rec == in.Was) || !s.matches(out.Rec, out.Rev) {
				return false, s
			}
			return true, s.bind(out.Rec, out.Rev)
		default: // unknown: it may have taken effect here (if it could)
			if !mayMatch {
				return true, s
			}
			return true, nil
		}
	}
	return false, s
}

// RecordStore returns st wrapped so that every Get and CompareAndSwap goes
// into h as client's. The wrapper forwards Watch when st watches,
// CompareReleasedAndSwap (recorded too) when st has it, and MayLoseRecords
// always (store.MayLoseRecords's answer for st), so electors see the
// capabilities of st itself.
func RecordStore[M any](st store.Store[M], h *History, client int) store.Store[M] {
	r := &recorded[M]{st: st, h: h, client: client, lossy: store.MayLoseRecords(st), guard: store.ReleaseGuardOf(st)}
	w, watches := st.(store.Watcher[M])
	switch {
	case watches && r.guard != nil:
		return &recordedGuardWatcher[M]{recordedWatcher[M]{recorded: r, w: w}}
	case watches:
		return &recordedWatcher[M]{recorded: r, w: w}
	case r.guard != nil:
		return &recordedGuard[M]{r}
	}
	return r
}

var (
	_ store.ReleaseGuard[struct{}] = (*recordedGuard[struct{}])(nil)
	_ store.ReleaseGuard[struct{}] = (*recordedGuardWatcher[struct{}])(nil)
)

// recordedGuard and recordedGuardWatcher forward st's store.ReleaseGuard.
type recordedGuard[M any] struct{ *recorded[M] }

type recordedGuardWatcher[M any] struct{ recordedWatcher[M] }

func (r *recordedGuard[M]) GuardsReleases() bool { return true }

func (r *recordedGuardWatcher[M]) GuardsReleases() bool { return true }

func (r *recordedGuard[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return r.guarded(ctx, name, expected, was, next)
}

func (r *recordedGuardWatcher[M]) CompareReleasedAndSwap(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return r.guarded(ctx, name, expected, was, next)
}

type recorded[M any] struct {
	st     store.Store[M]
	h      *History
	client int
	lossy  bool
	guard  store.ReleaseGuard[M] // st's, or nil
}

type recordedWatcher[M any] struct {
	*recorded[M]
	w store.Watcher[M]
}

// Watch forwards the events of st's watch, recording each delivery (see
// History.CheckWatches).
func (r *recordedWatcher[M]) Watch(ctx context.Context, name string) (<-chan store.Event[M], error) {
	in, err := r.w.Watch(ctx, name)
	if err != nil || in == nil {
		return in, err
	}
	w := r.h.newWatch(r.client)
	out := make(chan store.Event[M])
	go func() {
		defer close(out)
		for ev := range in {
			w.deliver(r.h, ev.Absent, ev.Err != nil, viewOf(ev.Record), ev.Revision)
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (r *recorded[M]) MayLoseRecords() bool { return r.lossy }

// WatchCapabilities forwards st's: Watch passes its events on unchanged.
func (r *recordedWatcher[M]) WatchCapabilities() store.WatchCapabilities {
	return r.w.WatchCapabilities()
}

func (r *recorded[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	call := r.h.now()
	rec, rev, err := r.st.Get(ctx, name)
	ret := r.h.now()
	out := OpOutput{Outcome: OutOK, Rec: viewOf(rec), Rev: rev}
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		out = OpOutput{Outcome: OutNotFound}
	default:
		r.h.noteErr(err)
		return rec, rev, err // a failed read says nothing
	}
	r.h.add(r.client, OpInput{Kind: OpGet}, out, call, ret)
	return rec, rev, err
}

func (r *recorded[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return r.swap(ctx, name, expected, nil, next)
}

// guarded records a guarded swap (store.ReleaseGuard).
func (r *recorded[M]) guarded(ctx context.Context, name string, expected lease.Revision, was store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	return r.swap(ctx, name, expected, &was, next)
}

// swap records a swap, guarded by was when it is not nil.
func (r *recorded[M]) swap(ctx context.Context, name string, expected lease.Revision, was *store.Released, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	in := OpInput{Kind: OpCAS, Expected: expected, Next: viewOf(next)}
	call := r.h.now()
	var (
		rec lease.Record[M]
		rev lease.Revision
		err error
	)
	if was != nil {
		in.Guarded, in.Was = true, RecView{Token: was.Token, Transitions: was.Transitions, LeaseDuration: was.LeaseDuration}
		rec, rev, err = r.guard.CompareReleasedAndSwap(ctx, name, expected, *was, next)
	} else {
		rec, rev, err = r.st.CompareAndSwap(ctx, name, expected, next)
	}
	ret := r.h.now()
	out := OpOutput{Outcome: OutOK, Rec: viewOf(rec), Rev: rev}
	switch {
	case err == nil:
	case errors.Is(err, store.ErrConflict):
		out.Outcome = OutConflict
	default:
		r.h.noteErr(err)
		out = OpOutput{Outcome: OutUnknown}
	}
	r.h.add(r.client, in, out, call, ret)
	return rec, rev, err
}

// watchLog is the deliveries of one watch.
type watchLog struct {
	client int
	evs    []watchEvent
}

type watchEvent struct {
	at      int64
	absent  bool
	corrupt bool
	rec     RecView
	rev     lease.Revision
}

func (h *History) newWatch(client int) *watchLog {
	w := &watchLog{client: client}
	h.mu.Lock()
	h.watches = append(h.watches, w)
	h.mu.Unlock()
	return w
}

func (w *watchLog) deliver(h *History, absent, corrupt bool, rec RecView, rev lease.Revision) {
	at := h.now()
	h.mu.Lock()
	w.evs = append(w.evs, watchEvent{at: at, absent: absent, corrupt: corrupt, rec: rec, rev: rev})
	h.mu.Unlock()
}

// WatchReport is what CheckWatches found.
type WatchReport struct {
	Watches, Events int
	// Backwards describes deliveries of a revision older than one the
	// same watch delivered before (Absent events, which carry no
	// revision, excepted).
	Backwards []string
	// Phantoms describes deliveries of a record at a revision that no
	// operation of the history returned, nor any swap of unknown outcome
	// could have written (same holder, token at least the proposed one,
	// revision above the expected one).
	Phantoms []string
}

// CheckWatches checks every recorded watch: revisions never go back, and
// every record delivered was written by some recorded operation.
func (h *History) CheckWatches() WatchReport {
	h.mu.Lock()
	defer h.mu.Unlock()
	type key struct {
		rec RecView
		rev lease.Revision
	}
	seen := map[key]bool{}
	var proposals []OpInput
	for _, op := range h.ops {
		in, out := op.Input.(OpInput), op.Output.(OpOutput)
		switch {
		case out.Outcome == OutOK && in.Kind != OpLose, out.Outcome == OutConflict && out.Rev != 0:
			seen[key{out.Rec, out.Rev}] = true
		case out.Outcome == OutUnknown:
			proposals = append(proposals, in)
		}
	}
	var r WatchReport
	for _, w := range h.watches {
		r.Watches++
		var last lease.Revision
		for _, ev := range w.evs {
			r.Events++
			if ev.absent {
				continue
			}
			if ev.rev < last {
				r.Backwards = append(r.Backwards, fmt.Sprintf("client %d's watch delivered revision %d at %v after %d", w.client, ev.rev, time.Duration(ev.at), last))
			}
			last = max(last, ev.rev)
			if ev.corrupt || seen[key{ev.rec, ev.rev}] {
				continue
			}
			explained := false
			for _, p := range proposals {
				if p.Kind == OpCAS && p.Next.Holder == ev.rec.Holder && ev.rec.Token >= p.Next.Token && ev.rev > p.Expected {
					explained = true
					break
				}
			}
			if !explained {
				r.Phantoms = append(r.Phantoms, fmt.Sprintf("client %d's watch delivered %+v at revision %d at %v, which no recorded write made", w.client, ev.rec, ev.rev, time.Duration(ev.at)))
			}
		}
	}
	return r
}

// noteErr counts an error that made an outcome unknown, by its first line
// cut to a stable prefix.
func (h *History) noteErr(err error) {
	msg := err.Error()
	if i := strings.IndexAny(msg, "\n"); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 80 {
		msg = msg[:80]
	}
	h.mu.Lock()
	h.errs[msg]++
	h.mu.Unlock()
}
