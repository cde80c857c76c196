package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/storeurl"
)

// putRaw writes a record to a memory:// store of o as it is, bypassing every
// check, as anyone with write access to a real store can.
func putRaw(t *testing.T, o *storeurl.Opener, url, name string, rec lease.Record[[]byte]) {
	t.Helper()
	st, err := storeurl.Open[rawMeta](context.Background(), o, url)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := st.(interface {
		PutRaw(string, lease.Record[[]byte]) (lease.Revision, error)
	})
	if !ok {
		t.Fatalf("%T has no PutRaw", st)
	}
	if _, err := raw.PutRaw(name, rec); err != nil {
		t.Fatal(err)
	}
}

// terminalSafe fails t when out holds a character that acts on a terminal:
// a control character other than the line feed, or a Unicode format
// character such as U+202E (right-to-left override).
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: invalid UTF-8 in %q", what, out)
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\u200b' {
			t.Errorf("%s: output holds %U:\n%q", what, r, out)
			return
		}
	}
}

// A holder and metadata written by someone hostile reach the terminal
// escaped: no escape sequence, no fake line, no direction override.
func TestGetAndWatchEscapeStoredText(t *testing.T) {
	o := &storeurl.Opener{}
	const url = "memory://escape"
	evil := lease.Record[[]byte]{
		// A holder may not hold control characters (the store reports such
		// a record as corrupt: TestGetReportsControlCharactersInHolder),
		// but format characters pass.
		Holder:        "mallory\u202e\u200bholder",
		Token:         7,
		LeaseDuration: time.Second,
		Metadata:      []byte("{\"note\": \"\u202etxt.exe\",\n\"fake\": \"\\u001b[2J\"}"),
	}
	putRaw(t, o, url, "job", evil)

	code, out := inProcess(context.Background(), o, "get", "--store", url, "job")
	if code != 0 {
		t.Fatalf("get: %d %s", code, out)
	}
	terminalSafe(t, "get", out.String())
	if n := strings.Count(out.String(), "\n"); n != 9 {
		t.Errorf("get printed %d lines, want 9:\n%s", n, out)
	}
	if !strings.Contains(out.String(), `holder:       "mallory\u202e\u200bholder"`) {
		t.Errorf("get does not show the holder quoted:\n%s", out)
	}
	// Metadata stays valid JSON, on one line.
	var meta string
	for _, l := range strings.Split(out.String(), "\n") {
		if m, ok := strings.CutPrefix(l, "metadata:     "); ok {
			meta = m
		}
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(meta), &v); err != nil || v["note"] != "\u202etxt.exe" || v["fake"] != "\x1b[2J" {
		t.Errorf("metadata %q: %v %q", meta, err, v)
	}

	code, out = inProcess(context.Background(), o, "get", "--store", url, "-o", "json", "job")
	terminalSafe(t, "get -o json", out.String())
	var rec recordJSON
	if err := json.Unmarshal([]byte(out.String()), &rec); code != 0 || err != nil || rec.Holder != evil.Holder {
		t.Errorf("get -o json: %d %v %+v", code, err, rec)
	}

	for _, format := range []string{"text", "json"} {
		ctx, cancel := context.WithCancel(context.Background())
		var watched syncBuffer
		first := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			run(context.WithValue(ctx, openerKey{}, o), []string{"watch", "--store", url, "-o", format, "job"}, &firstWrite{w: &watched, first: first}, &watched)
		}()
		<-first
		cancel()
		<-done
		terminalSafe(t, "watch -o "+format, watched.String())
		if n := strings.Count(watched.String(), "\n"); n != 1 {
			t.Errorf("watch -o %s printed %d lines for one record:\n%s", format, n, watched.String())
		}
	}
}

// TestWatchJSONEveryLineIsJSON: with -o json, an absent record, a record
// and an unreadable one each print one JSON object, and nothing else goes
// to stdout.
func TestWatchJSONEveryLineIsJSON(t *testing.T) {
	fastEnv(t)
	o := &storeurl.Opener{}
	const url = "memory://watchjson"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan string, 100)
	done := make(chan int, 1)
	stdout := &lineWriter{lines: lines}
	var stderr syncBuffer
	go func() {
		done <- run(context.WithValue(ctx, openerKey{}, o), []string{"watch", "--store", url, "-o", "json", "job"}, stdout, &stderr)
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case l := <-lines:
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("stdout line is not JSON: %q (%v)", l, err)
			}
			return v
		case <-time.After(10 * time.Second):
			t.Fatal("no line from watch")
			return nil
		}
	}
	if v := next(); v["absent"] != true || v["name"] != "job" {
		t.Errorf("first event %v, want absent", v)
	}
	putRaw(t, o, url, "job", lease.Record[[]byte]{Holder: "a", Token: 1, LeaseDuration: time.Second, Metadata: []byte(`{"n":1}`)})
	if v := next(); v["holder"] != "a" || v["token"] != float64(1) {
		t.Errorf("record event %v", v)
	}
	putRaw(t, o, url, "job", lease.Record[[]byte]{Holder: "a", Token: 2, LeaseDuration: time.Second, Metadata: []byte("not json")})
	if v := next(); v["error"] == nil || v["revision"] == nil {
		t.Errorf("unreadable record event %v, want error and revision", v)
	}
	cancel()
	if code := <-done; code != 0 || stderr.String() != "" {
		t.Errorf("watch exited %d, stderr %q", code, stderr.String())
	}
}

// lineWriter sends each line written to it on lines.
type lineWriter struct {
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		l, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(l)
			return len(p), nil
		}
		w.lines <- strings.TrimSuffix(l, "\n")
	}
}

// TestStoreFromEnvironment: TENURE_STORE names the store when --store is
// not given; --store wins when both are.
func TestStoreFromEnvironment(t *testing.T) {
	o := &storeurl.Opener{}
	putRaw(t, o, "memory://env", "job", lease.Record[[]byte]{Holder: "from-env", Token: 1, LeaseDuration: time.Second, Metadata: []byte("null")})
	t.Setenv("TENURE_STORE", "memory://env")
	if code, out := inProcess(context.Background(), o, "get", "job"); code != 0 || !strings.Contains(out.String(), "from-env") {
		t.Errorf("get with TENURE_STORE: %d\n%s", code, out)
	}
	t.Setenv("TENURE_STORE", "nosuch://x")
	if code, out := inProcess(context.Background(), o, "get", "--store", "memory://env", "job"); code != 0 || !strings.Contains(out.String(), "from-env") {
		t.Errorf("--store does not win over TENURE_STORE: %d\n%s", code, out)
	}
	t.Setenv("TENURE_STORE", "")
	for _, cmd := range [][]string{{"get", "job"}, {"watch", "job"}, {"run", "job", "--", "true"}} {
		if code, out := inProcess(context.Background(), o, cmd...); code != 1 || !strings.Contains(out.String(), "--store or TENURE_STORE is required") {
			t.Errorf("tenure %v without a store: %d\n%s", cmd, code, out)
		}
	}
}

// TestCommandsNeverShowAPassword: whatever the form of the store URL or
// DSN, from --store or TENURE_STORE, no output shows its password.
func TestCommandsNeverShowAPassword(t *testing.T) {
	t.Setenv("PGHOST", "")
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, u := range []string{
		"redis://user:hunter2@127.0.0.1:1/0",
		"redis://:hunter2@/0",
		"rediss://:hunter2@host:notaport",
		"unix://:hunter2@host/redis.sock",
		"postgres://app:hunter2@%zz/db",
		"postgres://app@127.0.0.1:1/db?password=hunter2&connect_timeout=2",
		"postgresql://app:hunter2@/db",
		"host=db user=app password=hunter2",
		"host=db password='hunter2 x'",
		"kubernetes://me:hunter2@ns",
		"nosuch://me:hunter2@host",
	} {
		for _, fromEnv := range []bool{false, true} {
			args := []string{"get", "--store", u, "job"}
			if fromEnv {
				t.Setenv("TENURE_STORE", u)
				args = []string{"get", "job"}
			}
			code, out := inProcess(context.Background(), &storeurl.Opener{}, args...)
			if code != 1 || strings.Contains(out.String(), "hunter2") {
				t.Errorf("tenure get (store %q, from the environment: %v): exit %d, output:\n%s", u, fromEnv, code, out)
			}
		}
	}
}

// TestLibraryLogsAreRouted: go-redis's own log lines ("connection pool:
// failed to dial") do not reach stderr beside tenure's one-line error;
// tenure run -v shows them through its own log, marked library=go-redis.
func TestLibraryLogsAreRouted(t *testing.T) {
	bin := tenureBinary(t)
	cmd := exec.Command(bin, "get", "--store", "redis://127.0.0.1:1/0", "job")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("get on a closed port succeeded")
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "tenure get: ") || stdout.Len() != 0 {
		t.Errorf("stderr of tenure get, want one line of its own:\n%s", stderr.String())
	}

	cmd = exec.Command(bin, "run", "-v", "--store", "redis://127.0.0.1:1/0", "job", "--", "true")
	stderr.Reset()
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if !strings.Contains(stderr.String(), "library=go-redis") {
		t.Errorf("tenure run -v does not show go-redis's lines through its log:\n%s", stderr.String())
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "redis: ") {
			t.Errorf("go-redis wrote to stderr itself: %q", l)
		}
	}
}

// A holder with control characters makes the record corrupt
// (store.ValidateStored): get fails, and its message shows the holder
// escaped.
func TestGetReportsControlCharactersInHolder(t *testing.T) {
	o := &storeurl.Opener{}
	const url = "memory://escape-control"
	putRaw(t, o, url, "job", lease.Record[[]byte]{
		Holder: "\x1b[31mmallory\nholder:       alice", Token: 7, LeaseDuration: time.Second, Metadata: []byte("{}"),
	})
	code, out := inProcess(context.Background(), o, "get", "--store", url, "job")
	if code == 0 || !strings.Contains(out.String(), "corrupt record") {
		t.Fatalf("get: exit %d, want a corrupt record error:\n%s", code, out)
	}
	terminalSafe(t, "get", out.String())
}

// TestJSONOutputShowsRecordsWithTimesPastYear9999: a record's times are
// written by whoever can write the store, and PostgreSQL or the memory
// store keep a time past year 9999, which has no RFC 3339 form. get, ls
// and watch with -o json still print every record, as one JSON line each,
// rather than failing (ls: the whole listing) on that one.
func TestJSONOutputShowsRecordsWithTimesPastYear9999(t *testing.T) {
	o := &storeurl.Opener{}
	const url = "memory://far-times"
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	putRaw(t, o, url, "far", lease.Record[[]byte]{Holder: "mallory", Token: 3, AcquiredAt: far, RenewedAt: far, LeaseDuration: time.Second, Metadata: []byte("null")})
	putRaw(t, o, url, "ok", lease.Record[[]byte]{Holder: "alice", Token: 4, AcquiredAt: lsNow, RenewedAt: lsNow, LeaseDuration: time.Second, Metadata: []byte("null")})

	code, out, errOut := inProcessSplit(t.Context(), o, "get", "--store", url, "-o", "json", "far")
	var rec recordJSON
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || rec.Holder != "mallory" || rec.Token != 3 {
		t.Errorf("get -o json: exit %d, %v, %+v; stderr %q", code, err, rec, errOut)
	}

	code, out, errOut = ls(t.Context(), o, "--store", url, "-o", "json")
	var all []recordJSON
	if err := json.Unmarshal([]byte(out), &all); code != 0 || err != nil || len(all) != 2 || all[0].Holder != "mallory" || all[1].Holder != "alice" {
		t.Errorf("ls -o json: exit %d, %v, %+v; stderr %q", code, err, all, errOut)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lines := make(chan string, 10)
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() {
		done <- run(context.WithValue(ctx, openerKey{}, o), []string{"watch", "--store", url, "-o", "json", "far"}, &lineWriter{lines: lines}, &stderr)
	}()
	select {
	case l := <-lines:
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Holder != "mallory" {
			t.Errorf("watch -o json printed %q: %v", l, err)
		}
	case code := <-done:
		t.Errorf("watch -o json exited %d before printing the record; stderr %q", code, stderr.String())
		done <- code
	}
	cancel()
	<-done
}

// A holder or successor with a space or an equals sign is quoted on a
// line of tenure watch, so that it cannot pass for fields of its own: a
// holder "a token=99" would otherwise show a second token.
func TestWatchLineQuotesAHolderThatLooksLikeFields(t *testing.T) {
	o := &storeurl.Opener{}
	const url = "memory://fields"
	now := time.Now()
	putRaw(t, o, url, "held", lease.Record[[]byte]{Holder: "a token=99", Token: 3, LeaseDuration: 15 * time.Second, AcquiredAt: now, RenewedAt: now, Metadata: []byte("{}")})
	putRaw(t, o, url, "named", lease.Record[[]byte]{Token: 3, LeaseDuration: 15 * time.Second, AcquiredAt: now, RenewedAt: now, Successor: "b token=99", Metadata: []byte("{}")})
	for name, want := range map[string]string{"held": `holder="a token=99" token=3 `, "named": `holder=(released) successor="b token=99" token=3 `} {
		if text := watchOnce(t, o, url, "text", name); !strings.Contains(text, want) || strings.Count(text, "token=") != 2 {
			t.Errorf("watch %s: %q; want %q, and no token= but the quoted one and the record's", name, text, want)
		}
	}
}
