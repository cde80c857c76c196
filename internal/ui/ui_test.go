package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

type meta = json.RawMessage

var t0 = time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)

// put writes a record for name on st, a new term when holder or token
// differ from the stored ones, and returns its revision.
func put(t *testing.T, st store.Store[meta], name, holder string, token uint64, md string) lease.Revision {
	t.Helper()
	ctx := context.Background()
	_, rev, err := st.Get(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	rec := lease.Record[meta]{
		Holder: holder, Token: token, AcquiredAt: t0, RenewedAt: t0.Add(time.Second),
		LeaseDuration: 10 * time.Second, Transitions: token,
	}
	if holder == "" {
		rec.LeaseDuration = 0
	}
	if md != "" {
		rec.Metadata = meta(md)
	}
	_, rev, err = st.CompareAndSwap(ctx, name, rev, rec)
	if err != nil {
		t.Fatalf("write %q: %v", name, err)
	}
	return rev
}

func newServer(t *testing.T, st store.Store[meta], cfg Config) *Server[meta] {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0.Add(5 * time.Second) }
	}
	s, err := New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// getState fetches /api/state from s.
func getState(t *testing.T, s http.Handler) (Message, *httptest.ResponseRecorder) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:8080/api/state", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/state: %d %s", rec.Code, rec.Body)
	}
	var m Message
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("GET /api/state: %v in %s", err, rec.Body)
	}
	return m, rec
}

func TestStateListsEveryRecordUnderThePrefix(t *testing.T) {
	st := memstore.New[meta]()
	put(t, st, "jobs/a", "node-1", 3, `{"addr":"10.0.0.1:80"}`)
	put(t, st, "jobs/b", "", 4, "")
	put(t, st, "other", "node-2", 1, "")
	s := newServer(t, st, Config{Prefix: "jobs/"})
	s.refresh(t.Context())
	m, _ := getState(t, s)
	if !m.Reset || m.Prefix != "jobs/" || len(m.Rows) != 2 {
		t.Fatalf("state = %+v, want a reset with the 2 rows under jobs/", m)
	}
	a, b := m.Rows[0], m.Rows[1]
	if a.Name != "jobs/a" || a.Holder != "node-1" || a.Token != 3 || a.Transitions != 3 || a.Metadata != `{"addr":"10.0.0.1:80"}` ||
		a.AcquiredAt == nil || !a.AcquiredAt.Equal(t0) || a.RenewedAt == nil || a.LeaseDuration != "10s" {
		t.Errorf("row a = %+v", a)
	}
	if b.Name != "jobs/b" || b.Holder != "" || b.Token != 4 || b.Metadata != "" {
		t.Errorf("row b (released) = %+v", b)
	}
	if len(a.History) != 1 || !a.History[0].First || a.History[0].Holder != "node-1" || !a.History[0].At.Equal(t0) {
		t.Errorf("history of a = %+v, want the holder first seen, at its AcquiredAt", a.History)
	}
}

func TestStateMarksAClaim(t *testing.T) {
	st := memstore.New[meta]()
	ctx := context.Background()
	if _, _, err := st.CompareAndSwap(ctx, "c", 0, lease.Record[meta]{Holder: "n", Token: 1, LeaseDuration: time.Second, Claim: true}); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, st, Config{})
	s.refresh(ctx)
	m, _ := getState(t, s)
	if len(m.Rows) != 1 || !m.Rows[0].Claim || !m.Rows[0].History[0].Claim {
		t.Fatalf("rows = %+v, want the claim marked", m.Rows)
	}
}

// A release handed to a successor names it in its row.
func TestStateNamesTheSuccessorOfARelease(t *testing.T) {
	st := memstore.New[meta]()
	ctx := context.Background()
	if _, _, err := st.CompareAndSwap(ctx, "h", 0, lease.Record[meta]{Token: 1, LeaseDuration: time.Second, Successor: "n2"}); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, st, Config{})
	s.refresh(ctx)
	m, _ := getState(t, s)
	if len(m.Rows) != 1 || m.Rows[0].Holder != "" || m.Rows[0].Successor != "n2" {
		t.Fatalf("rows = %+v, want the release naming n2", m.Rows)
	}
}

func TestStateEscapesMarkupFromTheStore(t *testing.T) {
	const name = `<script>alert("name")</script>`
	const holder = `<img src=x onerror=alert(1)>`
	const md = `{"x":"</script><script>alert(2)</script>&amp;"}`
	st := memstore.New[meta]()
	put(t, st, name, holder, 1, md)
	s := newServer(t, st, Config{})
	s.refresh(t.Context())
	m, rec := getState(t, s)
	body := rec.Body.String()
	for _, bad := range []string{"<", ">", "&amp;"} {
		if strings.Contains(body, bad) {
			t.Errorf("/api/state holds %q unescaped: %s", bad, body)
		}
	}
	if len(m.Rows) != 1 || m.Rows[0].Name != name || m.Rows[0].Holder != holder || !sameJSON(m.Rows[0].Metadata, md) {
		t.Errorf("decoded rows = %+v, want the name, holder and metadata as stored", m.Rows)
	}
	if !strings.Contains(m.Rows[0].Metadata, "</script>") {
		t.Errorf("metadata %q, want it readable: </script> as text", m.Rows[0].Metadata)
	}
	h := rec.Header()
	if got := h.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe-inline") {
		t.Errorf("Content-Security-Policy = %q, want scripts from the page's origin only", got)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", h)
	}
}

func TestPageIsSelfContained(t *testing.T) {
	s := newServer(t, memstore.New[meta](), Config{})
	for path, want := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/app.css": "text/css"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost"+path, nil))
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), want) {
			t.Fatalf("GET %s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		body := rec.Body.String()
		for _, external := range []string{"http://", "https://", "//cdn", "@import", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"} {
			if strings.Contains(body, external) {
				t.Errorf("%s holds %q: the page must fetch nothing else and never parse text as HTML", path, external)
			}
		}
		if path == "/" && strings.Contains(body, "<script>") {
			t.Errorf("/ has an inline script, which the Content-Security-Policy forbids")
		}
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "http://localhost/api/state", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/state: %d, want 405", rec.Code)
	}
}

func TestHostsOtherThanAddressesAndLocalhostAreRefused(t *testing.T) {
	s := newServer(t, memstore.New[meta](), Config{Hosts: []string{"tenure.internal"}})
	for host, want := range map[string]int{
		"127.0.0.1:8080":       200,
		"[::1]:8080":           200,
		"localhost:8080":       200,
		"LOCALHOST":            200,
		"tenure.internal:8080": 200,
		"rebound.example:8080": http.StatusMisdirectedRequest,
		"localhost.example":    http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest("GET", "/api/state", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
}

func TestHistoryKeepsTheLatestHandovers(t *testing.T) {
	st := newState(Config{History: 3, MaxNames: 10, MaxMetadataBytes: 100})
	for tok := uint64(1); tok <= 10; tok++ {
		st.apply("n", obs{row: Row{Revision: tok, Holder: fmt.Sprintf("node-%d", tok%2), Token: tok}}, t0.Add(time.Duration(tok)*time.Second))
	}
	m, _ := st.since(0, true)
	h := m.Rows[0].History
	if len(h) != 3 {
		t.Fatalf("history has %d entries, want 3: %+v", len(h), h)
	}
	for i, e := range h {
		if want := uint64(8 + i); e.Token != want || e.First || !e.At.Equal(t0.Add(time.Duration(want)*time.Second)) {
			t.Errorf("history[%d] = %+v, want token %d seen at its write", i, e, want)
		}
	}
}

func TestRenewalsAndOlderRevisionsAddNoHandover(t *testing.T) {
	st := newState(Config{History: 5, MaxNames: 10})
	st.apply("n", obs{row: Row{Revision: 5, Holder: "a", Token: 7}}, t0)
	st.apply("n", obs{row: Row{Revision: 6, Holder: "a", Token: 7}}, t0)                 // a renewal
	st.apply("n", obs{row: Row{Revision: 4, Holder: "b", Token: 6}}, t0)                 // older: a late listing
	st.apply("n", obs{row: Row{Revision: 8, Holder: "", Token: 7}}, t0.Add(time.Second)) // a release
	m, _ := st.since(0, true)
	r := m.Rows[0]
	if r.Revision != 8 || r.Holder != "" {
		t.Fatalf("row = %+v, want the release at revision 8", r)
	}
	if len(r.History) != 2 || r.History[1].Holder != "" || !r.History[1].At.Equal(t0.Add(time.Second)) {
		t.Fatalf("history = %+v, want first seen then the release, seen at its instant", r.History)
	}
}

func TestListingIsCutAtMaxNames(t *testing.T) {
	st := memstore.New[meta]()
	for i := range 20 {
		put(t, st, fmt.Sprintf("n%02d", i), "h", 1, "")
	}
	s := newServer(t, st, Config{MaxNames: 5})
	s.refresh(t.Context())
	m, _ := getState(t, s)
	if len(m.Rows) != 5 || m.Rows[4].Name != "n04" || !m.Truncated || m.MaxNames != 5 {
		t.Fatalf("state = %d rows, truncated %v; want the first 5 names and truncated", len(m.Rows), m.Truncated)
	}
	if got := s.watched(); got != 5 {
		t.Fatalf("%d names watched, want the 5 shown", got)
	}
}

func TestMetadataIsCut(t *testing.T) {
	st := memstore.New[meta]()
	put(t, st, "n", "h", 1, `"`+strings.Repeat("é", 100)+`"`)
	s := newServer(t, st, Config{MaxMetadataBytes: 11})
	s.refresh(t.Context())
	m, _ := getState(t, s)
	if r := m.Rows[0]; r.Metadata != `"ééééé` || !r.MetadataCut {
		t.Fatalf("metadata %q cut=%v, want 11 bytes cut at a character: %q", r.Metadata, r.MetadataCut, `"ééééé`)
	}
}

func TestRemovedNamesReachAPageOrItIsReset(t *testing.T) {
	st := newState(Config{History: 1, MaxNames: 2 * maxRemoved})
	st.apply("kept", obs{row: Row{Revision: 1, Holder: "h"}}, t0)
	st.apply("gone", obs{row: Row{Revision: 1, Holder: "h"}}, t0)
	m0, _ := st.since(0, true)
	st.apply("gone", obs{absent: true}, t0)
	m, _ := st.since(m0.Seq, false)
	if m.Reset || len(m.Rows) != 0 || len(m.Removed) != 1 || m.Removed[0] != "gone" {
		t.Fatalf("update = %+v, want the removal of gone only", m)
	}
	for i := range maxRemoved + 1 {
		name := fmt.Sprint(i)
		st.apply(name, obs{row: Row{Revision: 1, Holder: "h"}}, t0)
		st.apply(name, obs{absent: true}, t0)
	}
	if m, _ := st.since(m.Seq, false); !m.Reset || len(m.Rows) != 1 || m.Rows[0].Name != "kept" {
		t.Fatalf("after more removals than kept, update = reset %v with %d rows; want a reset with the one row", m.Reset, len(m.Rows))
	}
}

// hidden hides every method of its store but Get and CompareAndSwap.
type hidden struct{ store.Store[meta] }

// listOnly hides Watch but lists.
type listOnly struct {
	store.Store[meta]
	store.Lister[meta]
}

func TestStoreThatCannotListIsRefusedUnlessNamed(t *testing.T) {
	st := memstore.New[meta]()
	_, err := New[meta](hidden{st}, Config{})
	if !errors.Is(err, ErrCannotList) || !errors.Is(err, store.ErrListUnsupported) || !strings.Contains(err.Error(), "Names") {
		t.Fatalf("New on a store that cannot list: %v, want ErrCannotList saying to name the elections", err)
	}
	put(t, st, "a", "h", 1, "")
	s := newServer(t, hidden{st}, Config{Names: []string{"a", "b"}})
	s.refresh(t.Context())
	m, _ := getState(t, s)
	if len(m.Rows) != 1 || m.Rows[0].Name != "a" || !strings.Contains(m.Mode, "reading 2 names") {
		t.Fatalf("state = %+v, want a's row, b absent, read every interval", m)
	}
	if _, err := New[meta](st, Config{Names: []string{"a"}, Prefix: "x"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Names and Prefix: %v, want ErrConfig", err)
	}
	if _, err := New[meta](st, Config{Names: []string{""}}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Names[0]") {
		t.Fatalf("an empty name: %v, want ErrConfig naming Names[0]", err)
	}
	if _, err := New[meta](st, Config{History: -1}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "History") {
		t.Fatalf("History -1: %v, want ErrConfig naming History", err)
	}
}

func TestStoreThatCannotWatchIsPolled(t *testing.T) {
	st := memstore.New[meta]()
	put(t, st, "a", "h1", 1, "")
	s := newServer(t, listOnly{st, st}, Config{})
	s.refresh(t.Context())
	put(t, st, "a", "h2", 2, "")
	put(t, st, "b", "h3", 1, "")
	s.refresh(t.Context())
	m, _ := getState(t, s)
	if len(m.Rows) != 2 || m.Rows[0].Holder != "h2" || len(m.Rows[0].History) != 2 || !strings.Contains(m.Mode, "does not watch") {
		t.Fatalf("state = %+v, want a held by h2 after a handover, b found, polled", m)
	}
}

// sse reads server-sent events from a response body.
type sse struct{ sc *bufio.Scanner }

// next returns the next event's kind and message.
func (r sse) next(t *testing.T) (string, Message) {
	t.Helper()
	var kind, data string
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		case line == "" && data != "":
			var m Message
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("event data: %v in %s", err, data)
			}
			return kind, m
		}
	}
	t.Fatalf("event stream ended: %v", r.sc.Err())
	return "", Message{}
}

// follow opens the event stream of the server at url, for at most 10s.
func follow(t *testing.T, url string) (sse, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	return sse{bufio.NewScanner(resp.Body)}, resp
}

func TestEventsFollowAHandoverThroughTheWatch(t *testing.T) {
	st := memstore.New[meta]()
	put(t, st, "a", "node-1", 1, "")
	// An interval longer than the test: only the watch can report the
	// handover.
	s := newServer(t, st, Config{Interval: time.Hour, Now: time.Now})
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	srv := httptest.NewServer(s)
	defer srv.Close()
	ev, _ := follow(t, srv.URL)
	kind, m := ev.next(t)
	for len(m.Rows) == 0 { // Run has not listed yet
		kind, m = ev.next(t)
	}
	if kind != "reset" || m.Rows[0].Holder != "node-1" {
		t.Fatalf("first event %s %+v, want a reset with node-1", kind, m)
	}
	put(t, st, "a", "node-2", 2, "")
	for {
		kind, m = ev.next(t)
		if kind != "update" {
			t.Fatalf("event %s, want update", kind)
		}
		if len(m.Rows) == 1 && m.Rows[0].Holder == "node-2" {
			break
		}
	}
	h := m.Rows[0].History
	if len(h) != 2 || h[1].Holder != "node-2" || h[1].Token != 2 || h[1].First {
		t.Fatalf("history = %+v, want the handover to node-2 with token 2", h)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestServeEndsWhenItsContextEnds(t *testing.T) {
	st := memstore.New[meta]()
	put(t, st, "a", "node-1", 1, "")
	s := newServer(t, st, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, s) }()
	ev, resp := follow(t, "http://"+ln.Addr().String())
	ev.next(t)
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of its context ending")
	}
	// The stream was ended by the server, not by the client's timeout.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("event stream: %v, want its end", err)
	}
}

// sameJSON reports whether JSON texts a and b hold the same value.
func sameJSON(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && fmt.Sprint(va) == fmt.Sprint(vb)
}

func TestUnescapeMarkupWritesOnlyMarkupEscapesAsCharacters(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, `{"a":"<b> &"}`},
		{`"\\u003c"`, `"\\u003c"`}, // an escaped backslash, then text
		{`"\u0041\n\u003C"`, `"\u0041\n<"`},
		{`"\u00"`, `"\u00"`},
		{`"plain"`, `"plain"`},
	} {
		got := unescapeMarkup(tc.in)
		if got != tc.want {
			t.Errorf("unescapeMarkup(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !sameJSON(got, tc.in) && json.Valid([]byte(tc.in)) {
			t.Errorf("unescapeMarkup(%s) = %s, which means something else", tc.in, got)
		}
	}
}

// forging is memstore with a watch whose events are not authentic: after
// the first event of each watch, it delivers a forged one, as anyone who
// can publish on a Redis or PostgreSQL channel can.
type forging struct{ *memstore.Store[meta] }

func (forging) WatchCapabilities() store.WatchCapabilities { return store.WatchCapabilities{} }

func (f forging) Watch(ctx context.Context, name string) (<-chan store.Event[meta], error) {
	in, err := f.Store.Watch(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Event[meta])
	forged := store.Event[meta]{Record: lease.Record[meta]{Holder: "mallory", Token: 1 << 50, LeaseDuration: time.Hour}, Revision: 1 << 40}
	go func() {
		defer close(out)
		send := func(ev store.Event[meta]) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		first := true
		for ev := range in {
			if !send(ev) || first && !send(forged) {
				return
			}
			first = false
		}
	}()
	return out, nil
}

func (f forging) WatchFunc(ctx context.Context, name string, fn func(store.Event[meta], bool)) error {
	return store.WatchFuncVia[meta](ctx, f, name, fn)
}

func TestForgedWatchEventsAreOnlyHints(t *testing.T) {
	ms := memstore.New[meta]()
	put(t, ms, "a", "node-1", 1, "")
	s := newServer(t, forging{ms}, Config{Interval: time.Hour, Now: time.Now})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // first: Run's end ends the event stream, which srv.Close waits for
	go func() { _ = s.Run(ctx) }()
	ev, _ := follow(t, srv.URL)
	// seen returns the holder of the only row a message holds.
	seen := func(m Message) string {
		if len(m.Rows) == 0 {
			return ""
		}
		if r := m.Rows[0]; r.Holder == "mallory" {
			t.Fatalf("the page was sent the forged record: %+v", r)
		}
		return m.Rows[0].Holder
	}
	for _, m := ev.next(t); seen(m) != "node-1"; _, m = ev.next(t) {
	}
	put(t, ms, "a", "node-2", 2, "")
	for _, m := ev.next(t); seen(m) != "node-2"; _, m = ev.next(t) {
	}
}

func TestAStoreThatWentBackIsShownAfterTwoReads(t *testing.T) {
	st := newState(Config{History: 5, MaxNames: 10})
	st.apply("n", obs{row: Row{Revision: 10, Holder: "b", Token: 2}, read: true}, t0)
	holder := func() string { m, _ := st.since(0, true); return m.Rows[0].Holder }
	st.apply("n", obs{row: Row{Revision: 5, Holder: "a", Token: 1}}, t0)
	st.apply("n", obs{row: Row{Revision: 5, Holder: "a", Token: 1}}, t0)
	if h := holder(); h != "b" {
		t.Fatalf("holder %q after older watch events, want b: an event older than what is shown is late", h)
	}
	st.apply("n", obs{row: Row{Revision: 5, Holder: "a", Token: 1}, read: true}, t0)
	if h := holder(); h != "b" {
		t.Fatalf("holder %q after one older read, want b: it may have raced a newer event", h)
	}
	st.apply("n", obs{row: Row{Revision: 5, Holder: "a", Token: 1}, read: true}, t0)
	if h := holder(); h != "a" {
		t.Fatalf("holder %q after two reads of the same older revision, want a: the store went back", h)
	}
}

func TestEventStreamsAreBounded(t *testing.T) {
	s := newServer(t, memstore.New[meta](), Config{})
	s.streams = make(chan struct{}, 1)
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // first: Run's end ends the event stream, which srv.Close waits for
	go func() { _ = s.Run(ctx) }()
	ev, _ := follow(t, srv.URL)
	ev.next(t)
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a second page following a server that serves one: %d, want 503", resp.StatusCode)
	}
}

// A record's times are written by whoever can write the store, which may
// keep one past year 9999 (PostgreSQL, the memory store). Such a time has
// no RFC 3339 form and encoding/json refuses it: the page must still get
// the state, every other row included, rather than nothing at all.
func TestStateShowsARecordWithATimePastYear9999(t *testing.T) {
	st := memstore.New[meta]()
	put(t, st, "ok", "alice", 1, "")
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := st.CompareAndSwap(t.Context(), "far", 0, lease.Record[meta]{
		Holder: "mallory", Token: 2, AcquiredAt: far, RenewedAt: far, LeaseDuration: 10 * time.Second,
	}); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, st, Config{})
	s.refresh(t.Context())
	m, _ := getState(t, s)
	if len(m.Rows) != 2 || m.Rows[0].Holder != "mallory" || m.Rows[1].Holder != "alice" {
		t.Errorf("rows = %+v, want far (mallory) and ok (alice)", m.Rows)
	}
	msg, _ := s.message(0, true)
	if _, err := json.Marshal(msg); err != nil {
		t.Errorf("the event stream's message cannot be encoded: %v", err)
	}
}
