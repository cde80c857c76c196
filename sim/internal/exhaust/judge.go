package exhaust

import (
	"encoding/binary"
	"reflect"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/internal/oracle"
	"github.com/tenure-go/tenure/lease"
)

// newJudge returns the oracle of a bound: no drift, the largest
// RenewDeadline any node may use, every write recorded.
func newJudge(b Bound) judge {
	rd := max(b.Config.RenewDeadline, b.Config2.RenewDeadline)
	names := make([]string, b.Nodes)
	for i := range names {
		names[i] = nodeName(i)
	}
	return &oracleJudge{o: oracle.New(oracle.Params{Drift: 0, MaxRenewDeadline: rd, Complete: true, LossyStore: b.Lossy, Names: names})}
}

// oracleJudge is the judge the oracle is.
type oracleJudge struct{ o *oracle.Oracle }

func orec(l fsm.Lease) oracle.Rec {
	return oracle.Rec{Holder: l.Holder, Token: l.Token, Transitions: l.Transitions, LeaseDuration: l.LeaseDuration}
}

func onode(id int, gen uint32) oracle.Node { return oracle.Node{ID: id, Gen: gen} }

func (j *oracleJudge) boot(id int, gen uint32, at time.Duration) { j.o.Boot(onode(id, gen), int64(at)) }
func (j *oracleJudge) down(id int, gen uint32, at time.Duration) { j.o.Down(onode(id, gen), int64(at)) }
func (j *oracleJudge) send(id int, gen uint32, at time.Duration, expected lease.Revision, next fsm.Lease) any {
	return j.o.Send(onode(id, gen), int64(at), oracle.Rev(expected), orec(next))
}
func (j *oracleJudge) applied(at time.Duration, snap any, rev lease.Revision, stored fsm.Lease, clock uint64) {
	j.o.Applied(int64(at), snap.(oracle.Snapshot), oracle.Rev(rev), orec(stored), clock)
}
func (j *oracleJudge) deliver(id int, gen uint32, at time.Duration, rev lease.Revision, rec fsm.Lease, present bool) {
	j.o.Deliver(onode(id, gen), int64(at), oracle.Rev(rev), orec(rec), present)
}
func (j *oracleJudge) rollback(at time.Duration, to lease.Revision) {
	j.o.Rollback(int64(at), oracle.Rev(to))
}
func (j *oracleJudge) restore(at time.Duration, rev lease.Revision, rec fsm.Lease) {
	j.o.Restore(int64(at), oracle.Rev(rev), orec(rec))
}
func (j *oracleJudge) lose(at time.Duration) { j.o.Lose(int64(at)) }
func (j *oracleJudge) forge(at time.Duration, rev lease.Revision, rec fsm.Lease) {
	j.o.Forge(int64(at), oracle.Rev(rev), orec(rec))
}
func (j *oracleJudge) belief(id int, gen uint32, at time.Duration, leading bool, token uint64) {
	if !leading {
		token = 0
	}
	j.o.Belief(onode(id, gen), int64(at), leading, token)
}
func (j *oracleJudge) violation() (string, bool) {
	if !j.o.Failed() {
		return "", false
	}
	return j.o.Violations()[0].String(), true
}
func (j *oracleJudge) clone() judge              { return &oracleJudge{o: j.o.Clone()} }
func (j *oracleJudge) appendKey(b []byte) []byte { return j.o.AppendKey(b) }

// appendSnap encodes an oracle Snapshot by reflection over its fields,
// its place in the history (seq) counted back from the oracle's latest
// event, as the oracle's own key counts it: two histories that differ
// only in how many events came before are the same to the judgement.
func (j *oracleJudge) appendSnap(b []byte, snap any) []byte {
	sn := reflect.ValueOf(snap)
	now := reflect.ValueOf(j.o).Elem().FieldByName("seq").Uint()
	if f := sn.FieldByName("seq"); f.IsValid() {
		b = binary.AppendUvarint(b, now-f.Uint())
	}
	return appendValue(b, snap, "seq")
}
