package ui

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tenure-go/tenure/store"
)

// Row is one name's line of the table, as the page receives it.
type Row struct {
	Name     string `json:"name"`
	Revision uint64 `json:"revision"`
	Holder   string `json:"holder"`
	Claim    bool   `json:"claim,omitempty"`
	// Successor names whom a release was handed to (lease.Record's
	// Successor); "" on a held record and a plain release.
	Successor     string     `json:"successor,omitempty"`
	Token         uint64     `json:"token"`
	AcquiredAt    *time.Time `json:"acquiredAt,omitempty"`
	RenewedAt     *time.Time `json:"renewedAt,omitempty"`
	LeaseDuration string     `json:"leaseDuration"`
	Transitions   uint64     `json:"transitions"`
	// Metadata is the record's metadata as JSON text, cut to
	// Config.MaxMetadataBytes (MetadataCut then says so); "" when none.
	Metadata    string `json:"metadata,omitempty"`
	MetadataCut bool   `json:"metadataCut,omitempty"`
	// Error says why the record cannot be read; the other fields are
	// then those of the last record read.
	Error string `json:"error,omitempty"`
	// History is the name's recent handovers, oldest first.
	History []Handover `json:"history"`
}

// Handover is one holder change of a name: a new term, or a release.
type Handover struct {
	// At is when the term started (the record's AcquiredAt), or, for a
	// release or a record without it, when the Server saw the change.
	At time.Time `json:"at"`
	// Holder is the new holder; "" for a release.
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
	Claim  bool   `json:"claim,omitempty"`
	// First marks the holder the name had when the Server first saw it.
	First bool `json:"first,omitempty"`
}

// Message is what /api/state returns and each event of /api/events
// carries.
type Message struct {
	// Now is the Server's clock when it sent the message, for the page
	// to show ages by it rather than by its own.
	Now time.Time `json:"now"`
	// Seq orders messages: the state as of Seq.
	Seq uint64 `json:"seq"`
	// Reset: Rows are every row, and the page drops any other.
	Reset bool `json:"reset,omitempty"`
	// Rows are the rows that changed (every row when Reset), by name.
	Rows []Row `json:"rows"`
	// Removed are the names no longer shown.
	Removed []string `json:"removed,omitempty"`
	Prefix  string   `json:"prefix"`
	// Mode says how the records are kept current.
	Mode string `json:"mode"`
	// Truncated: more names than MaxNames were found; those past it (in
	// name order) are not shown.
	Truncated bool `json:"truncated,omitempty"`
	MaxNames  int  `json:"maxNames"`
	// Error is the last listing's failure, if it failed.
	Error string `json:"error,omitempty"`
}

// state is the rows shown, with what pages following the events need to
// catch up.
type state struct {
	history, maxNames, maxMeta int

	mu        sync.Mutex
	rows      map[string]*entry
	seq       uint64
	removed   []removal // the latest, at most maxRemoved
	lostUpTo  uint64    // removals at or before this seq were dropped from removed
	truncated bool
	err       string
	changed   chan struct{} // closed and replaced at every change
}

type entry struct {
	row Row
	seq uint64 // of the row's last change
	// lowerRead is the revision below row's that the last read found, if
	// it found one.
	lowerRead uint64
}

type removal struct {
	name string
	seq  uint64
}

func newState(cfg Config) *state {
	return &state{
		history: cfg.History, maxNames: cfg.MaxNames, maxMeta: cfg.MaxMetadataBytes,
		rows: map[string]*entry{}, changed: make(chan struct{}),
	}
}

// obs is one observation of a name: a record, its absence, or a record
// that cannot be read.
type obs struct {
	absent bool
	err    string
	row    Row // Name, History unset
	// read: the observation is a read of the store (a listing or a Get),
	// not a watch event.
	read bool
}

// observe turns what a store returned into an observation, metadata cut
// to maxMeta bytes.
func observe[M any](rec store.Event[M], maxMeta int) obs {
	switch {
	case rec.Absent:
		return obs{absent: true}
	case rec.Err != nil:
		return obs{err: cut(rec.Err.Error(), maxErrorBytes), row: Row{Revision: uint64(rec.Revision)}}
	}
	r := rec.Record
	row := Row{
		Revision: uint64(rec.Revision), Holder: r.Holder, Claim: r.Claim && r.Held(), Successor: r.Successor, Token: r.Token,
		LeaseDuration: r.LeaseDuration.String(), Transitions: r.Transitions,
	}
	row.AcquiredAt, row.RenewedAt = JSONTime(r.AcquiredAt), JSONTime(r.RenewedAt)
	// Not escaped for HTML here: the text is shown as text, and the JSON
	// it travels in escapes it.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.Metadata); err != nil {
		row.Metadata = "(metadata cannot be shown as JSON)"
	} else if m := unescapeMarkup(strings.TrimSuffix(b.String(), "\n")); m != "null" && m != `""` && m != "{}" {
		row.Metadata = cut(m, maxMeta)
		row.MetadataCut = len(row.Metadata) < len(m)
	}
	return obs{row: row}
}

// JSONTime returns t in UTC for a JSON field, or nil (the field left out,
// not shown) for the zero time and for a time outside years 0-9999: it
// has no RFC 3339 form, and encoding/json refuses it, which would fail the
// whole output. Anyone who can write the store can put one there.
func JSONTime(t time.Time) *time.Time {
	t = t.UTC()
	if t.IsZero() || t.Year() < 0 || t.Year() > 9999 {
		return nil
	}
	return &t
}

// unescapeMarkup returns JSON text with the escapes \u003c, \u003e and
// \u0026 (which Go's encoder writes for <, > and &) written as the
// characters, which mean the same in JSON, so that people read them: the
// page shows the text as text.
func unescapeMarkup(js string) string {
	if !strings.Contains(js, `\u00`) {
		return js
	}
	var b strings.Builder
	for i := 0; i < len(js); i++ {
		if js[i] != '\\' || i+1 >= len(js) {
			b.WriteByte(js[i])
			continue
		}
		if js[i+1] == 'u' && i+6 <= len(js) {
			switch strings.ToLower(js[i+2 : i+6]) {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(js[i : i+2]) // any other escape, \\ included, as it is
		i++
	}
	return b.String()
}

// cut returns s cut to at most n bytes, at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// apply records one observation of name made at now. An observation of
// an older revision than the row's is dropped: a listing and a watch
// report the same name in any order.
func (st *state) apply(name string, o obs, now time.Time) {
	if len(name) > store.MaxNameBytes {
		return // no election has such a name; it would only take memory
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.put(name, o, now) {
		st.notify()
	}
}

// put is apply under st.mu; it reports whether anything changed.
func (st *state) put(name string, o obs, now time.Time) bool {
	e := st.rows[name]
	if o.absent {
		if e == nil {
			return false
		}
		st.remove(name)
		return true
	}
	if e == nil {
		if len(st.rows) >= st.maxNames {
			st.truncated = true
			return false
		}
		e = &entry{}
		st.rows[name] = e
	} else if o.row.Revision < e.row.Revision {
		// Older than what is shown: a listing that raced a watch event,
		// and dropped. Two reads in a row that find the same older
		// revision show that the store went back (a restore): shown.
		if !o.read || e.lowerRead != o.row.Revision {
			if o.read {
				e.lowerRead = o.row.Revision
			}
			return false
		}
	} else if o.row.Revision == e.row.Revision && o.err == e.row.Error {
		e.lowerRead = 0
		return false
	}
	e.lowerRead = 0
	st.seq++
	e.seq = st.seq
	if o.err != "" {
		e.row.Revision, e.row.Error = o.row.Revision, o.err
		e.row.Name = name
		return true
	}
	prev := e.row
	next := o.row
	next.Name = name
	next.History = prev.History
	switch {
	case prev.Name == "": // first seen
		next.History = []Handover{handover(next, now, true)}
	case next.Token != prev.Token || next.Holder != prev.Holder:
		h := slices.Clone(next.History)
		if len(h) >= st.history {
			h = h[len(h)-st.history+1:]
		}
		next.History = append(h, handover(next, now, false))
	}
	e.row = next
	return true
}

// handover is the timeline entry of row's holder, seen at now.
func handover(row Row, now time.Time, first bool) Handover {
	h := Handover{At: now.UTC(), Holder: row.Holder, Token: row.Token, Claim: row.Claim, First: first}
	if row.Holder != "" && row.AcquiredAt != nil {
		h.At = *row.AcquiredAt
	}
	return h
}

// remove drops name's row, keeping the removal for pages that follow.
func (st *state) remove(name string) {
	delete(st.rows, name)
	st.seq++
	if len(st.removed) >= maxRemoved {
		st.lostUpTo = st.removed[0].seq
		st.removed = slices.Delete(st.removed, 0, 1)
	}
	st.removed = append(st.removed, removal{name, st.seq})
}

// applyListing records a whole listing made at now: the names it holds,
// cut at maxNames, and the removal of every other.
func (st *state) applyListing(listed []obs, names []string, now time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	changed := false
	keep := make(map[string]bool, min(len(names), st.maxNames))
	truncated := false
	for i, name := range names {
		if len(name) > store.MaxNameBytes {
			continue
		}
		if len(keep) >= st.maxNames {
			truncated = true
			break
		}
		keep[name] = true
		changed = st.put(name, listed[i], now) || changed
	}
	for name := range st.rows {
		if !keep[name] {
			st.remove(name)
			changed = true
		}
	}
	if st.truncated != truncated {
		st.truncated = truncated
		changed = true
	}
	if changed {
		st.notify()
	}
}

// setError sets the listing's failure ("" when it worked).
func (st *state) setError(msg string) {
	msg = cut(msg, maxErrorBytes)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != msg {
		st.err = msg
		st.seq++
		st.notify()
	}
}

// notify wakes the pages waiting for a change; st.mu is held.
func (st *state) notify() {
	close(st.changed)
	st.changed = make(chan struct{})
}

// names returns the names shown, sorted.
func (st *state) names() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, 0, len(st.rows))
	for name := range st.rows {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// since returns what changed after seq (everything, with Reset, when
// reset or when removals after seq were dropped), nil when nothing did,
// and a channel closed at the next change.
func (st *state) since(seq uint64, reset bool) (*Message, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !reset && seq == st.seq {
		return nil, st.changed
	}
	m := &Message{Seq: st.seq, Truncated: st.truncated, MaxNames: st.maxNames, Error: st.err, Rows: []Row{}}
	m.Reset = reset || seq < st.lostUpTo || seq > st.seq
	for _, e := range st.rows {
		if m.Reset || e.seq > seq {
			m.Rows = append(m.Rows, e.row)
		}
	}
	slices.SortFunc(m.Rows, func(a, b Row) int { return strings.Compare(a.Name, b.Name) })
	if !m.Reset {
		for _, r := range st.removed {
			if r.seq > seq {
				m.Removed = append(m.Removed, r.name)
			}
		}
	}
	return m, st.changed
}
