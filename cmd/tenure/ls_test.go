package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/storeurl"
)

// lsNow is the fixed time the tests of tenure ls compute ages from.
var lsNow = time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)

// lsStore fills the memory:// store url of o with one record of each kind
// the table shows, timed against lsNow, and returns o.
func lsStore(t *testing.T, url string) *storeurl.Opener {
	t.Helper()
	o := &storeurl.Opener{}
	st, err := storeurl.Open[rawMeta](context.Background(), o, url)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string, rec lease.Record[rawMeta], release bool) {
		t.Helper()
		got, rev, err := st.CompareAndSwap(context.Background(), name, 0, rec)
		if err != nil {
			t.Fatal(err)
		}
		if release {
			got.Holder = ""
			if _, _, err := st.CompareAndSwap(context.Background(), name, rev, got); err != nil {
				t.Fatal(err)
			}
		}
	}
	term := func(holder string, token uint64, acquired, renewed time.Duration, meta string) lease.Record[rawMeta] {
		return lease.Record[rawMeta]{
			Holder: holder, Token: token, AcquiredAt: lsNow.Add(-acquired), RenewedAt: lsNow.Add(-renewed),
			LeaseDuration: 15 * time.Second, Transitions: token - 1, Metadata: rawMeta(cmpOr(meta, "null")),
		}
	}
	put("billing/cron", term("worker-b", 7, 3*time.Hour+7*time.Minute, 2*time.Second, `{"addr":"10.0.0.7:8080"}`), false)
	put("billing/invoices", term("worker-a", 3, 4*time.Minute+5*time.Second, time.Second, `{"addr":"10.0.0.3:8080","zone":"eu-west-1a","build":"2026-12-01"}`), false)
	put("mail", term("worker-c", 12, 2*24*time.Hour+4*time.Hour, 40*time.Second, ""), false)
	put("reports", term("worker-a", 5, 30*time.Second, 30*time.Second, `{"note":"right-to-left \u202e here"}`), true)
	claim := term("worker-d", 2, 9*time.Second, 9*time.Second, "")
	claim.Claim = true
	put("search", claim, false)
	putRaw(t, o, url, "broken", lease.Record[[]byte]{Holder: "worker-e", Token: 4, LeaseDuration: 15 * time.Second, Metadata: []byte("{not json")})
	return o
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// ls runs tenure ls in this process, at lsNow, with stdout and stderr
// apart.
func ls(ctx context.Context, o *storeurl.Opener, args ...string) (code int, stdout, stderr string) {
	ctx = context.WithValue(ctx, clockKey{}, func() time.Time { return lsNow })
	return inProcessSplit(ctx, o, append([]string{"ls"}, args...)...)
}

// The table: a row per record, sorted by name; released, claimed, expired
// and unreadable records marked; ages from the clock; metadata cut and
// escaped.
func TestLsPrintsTable(t *testing.T) {
	const url = "memory://ls-table"
	o := lsStore(t, url)
	code, out, errOut := ls(t.Context(), o, "--store", url)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	const want = `NAME              HOLDER              TOKEN  SINCE  RENEWED  TRANSITIONS  METADATA
billing/cron      worker-b            7      3h07m  2s       6            {"addr":"10.0.0.7:8080"}
billing/invoices  worker-a            3      4m05s  1s       2            {"addr":"10.0.0.3:8080","zone":"eu-west…
broken            (unreadable)        -      -      -        -            memstore: record "broken": store: corru…
mail              worker-c (expired)  12     2d04h  40s      11           -
reports           (released)          5      30s    30s      4            {"note":"right-to-left \u202e here"}
search            worker-d (claim)    2      9s     9s       1            -
`
	if out != want {
		t.Errorf("tenure ls printed:\n%s\nwant:\n%s", out, want)
	}
	terminalSafe(t, "tenure ls", out)
}

// --sort orders by another column, ties by name, unreadable records
// last; by name, in name order only.
func TestLsSorts(t *testing.T) {
	const url = "memory://ls-sort"
	o := lsStore(t, url)
	for _, c := range []struct {
		by   string
		want []string
	}{
		{"name", []string{"billing/cron", "billing/invoices", "broken", "mail", "reports", "search"}},
		{"holder", []string{"reports", "billing/invoices", "billing/cron", "mail", "search", "broken"}},
		{"since", []string{"mail", "billing/cron", "billing/invoices", "reports", "search", "broken"}},
		{"renewed", []string{"mail", "reports", "search", "billing/cron", "billing/invoices", "broken"}},
		{"token", []string{"search", "billing/invoices", "reports", "billing/cron", "mail", "broken"}},
	} {
		t.Run(c.by, func(t *testing.T) {
			code, out, errOut := ls(t.Context(), o, "--store", url, "--sort", c.by)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := firstColumn(out); !equalStrings(got, c.want) {
				t.Errorf("--sort %s listed %q, want %q", c.by, got, c.want)
			}
		})
	}
}

// firstColumn returns the first word of each line of a table after its
// header.
func firstColumn(table string) []string {
	var names []string
	for i, line := range strings.Split(strings.TrimSpace(table), "\n") {
		if i > 0 {
			names = append(names, strings.Fields(line)[0])
		}
	}
	return names
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

// A PREFIX (the store filters) and --match (a glob, '*' crossing '/')
// narrow the listing; both together keep what both keep.
func TestLsFiltersByPrefixAndMatch(t *testing.T) {
	const url = "memory://ls-filter"
	o := lsStore(t, url)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"billing/"}, []string{"billing/cron", "billing/invoices"}},
		{[]string{"--match", "*cron"}, []string{"billing/cron"}},
		{[]string{"--match", "[mr]*"}, []string{"mail", "reports"}},
		{[]string{"--match", "[!bm]*"}, []string{"reports", "search"}},
		{[]string{"--match", "?ail"}, []string{"mail"}},
		{[]string{"b", "--match", "*s"}, []string{"billing/invoices"}},
		{[]string{"nothing"}, nil},
	} {
		code, out, errOut := ls(t.Context(), o, append([]string{"--store", url}, c.args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", c.args, code, errOut)
		}
		if got := firstColumn(out); !equalStrings(got, c.want) {
			t.Errorf("tenure ls %q listed %q, want %q", c.args, got, c.want)
		}
	}
}

// -o json prints one array: every record in full as tenure get -o json
// prints it, an unreadable one with its error.
func TestLsJSON(t *testing.T) {
	const url = "memory://ls-json"
	o := lsStore(t, url)
	code, out, errOut := ls(t.Context(), o, "--store", url, "-o", "json", "--sort", "token")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("-o json printed %d lines, want one array on one line:\n%s", strings.Count(out, "\n"), out)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(got) != 6 {
		t.Fatalf("%d entries, want 6: %s", len(got), out)
	}
	first, last := got[0], got[5]
	if first["name"] != "search" || first["holder"] != "worker-d" || first["claim"] != true || first["leaseDuration"] != "15s" || first["renewedAt"] != "2026-12-05T05:59:51Z" {
		t.Errorf("first entry = %v, want the claim of search, in full", first)
	}
	if last["name"] != "broken" || !strings.Contains(last["error"].(string), "corrupt") || last["holder"] != nil {
		t.Errorf("last entry = %v, want broken with its error only", last)
	}
	terminalSafe(t, "tenure ls -o json", out)
}

// unlistable is a store without List, as a custom store may be.
type unlistable struct{ storeurl.Store[rawMeta] }

var registerNoList sync.Once

// A store that cannot list gets an error that names it, and nothing is
// printed.
func TestLsRefusesAStoreWithoutLister(t *testing.T) {
	registerNoList.Do(func() {
		err := storeurl.Register("nolist", func(ctx context.Context, u *url.URL) (storeurl.Store[rawMeta], error) {
			st, err := storeurl.Open[rawMeta](ctx, nil, "memory://nolist")
			return unlistable{st}, err
		})
		if err != nil && !errors.Is(err, storeurl.ErrDuplicateScheme) {
			t.Fatal(err)
		}
	})
	code, out, errOut := ls(t.Context(), &storeurl.Opener{}, "--store", "nolist://x")
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	if want := "tenure ls: the nolist:// store cannot list its records (main.unlistable does not implement store.Lister)"; !strings.HasPrefix(errOut, want) {
		t.Errorf("stderr = %q, want it to start with %q", errOut, want)
	}
}

// Bad flags are refused, naming the flag and what it takes.
func TestLsRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sort", "age"}, `--sort is "age", want one of name, holder, since, renewed, token`},
		{[]string{"--match", "[ab"}, `--match "[ab" has a '[' without its ']'`},
		{[]string{"--match", `a\`}, `--match "a\\" ends in a lone '\'`},
		{[]string{"-o", "yaml"}, `-o is "yaml", want text or json`},
		{[]string{"--watch", "--interval", "0s"}, "-interval is 0s, must be > 0"},
		{[]string{"a", "b"}, "want at most one PREFIX, got 2 arguments"},
	} {
		code, _, errOut := ls(t.Context(), &storeurl.Opener{}, append([]string{"--store", "memory://flags"}, c.args...)...)
		if code != 1 && code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("tenure ls %q: exit %d, stderr %q; want %q", c.args, code, errOut, c.want)
		}
	}
}

// frames is a writer that hands each write to got, and cancels the
// listing once it has seen n writes.
type frames struct {
	mu     sync.Mutex
	writes []string
	n      int
	cancel context.CancelFunc
	after  func(i int) // called after write i, before the next listing
}

func (f *frames) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, string(p))
	if f.after != nil {
		f.after(len(f.writes))
	}
	if len(f.writes) >= f.n {
		f.cancel()
	}
	return len(p), nil
}

// --watch, not on a terminal, prints a table per listing, each showing the
// store as it is then, until interrupted.
func TestLsWatchPrintsATablePerListing(t *testing.T) {
	const url = "memory://ls-watch"
	o := lsStore(t, url)
	st, err := storeurl.Open[rawMeta](t.Context(), o, url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := &frames{n: 2, cancel: cancel, after: func(i int) {
		if i == 1 {
			rec := lease.Record[rawMeta]{Holder: "worker-f", Token: 1, AcquiredAt: lsNow, RenewedAt: lsNow, LeaseDuration: time.Minute}
			if _, _, err := st.CompareAndSwap(context.Background(), "added", 0, rec); err != nil {
				t.Error(err)
			}
		}
	}}
	ctx = context.WithValue(context.WithValue(ctx, clockKey{}, func() time.Time { return lsNow }), openerKey{}, o)
	var errOut bytes.Buffer
	if code := run(ctx, []string{"ls", "--store", url, "--watch", "--interval", "1ms"}, f, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if len(f.writes) != 2 {
		t.Fatalf("%d writes, want 2 (one per listing)", len(f.writes))
	}
	for i, w := range f.writes {
		if strings.Contains(w, "\x1b") || !strings.HasPrefix(w, "NAME ") || !strings.HasSuffix(w, "\n\n") {
			t.Errorf("listing %d is not a plain table followed by a blank line:\n%q", i, w)
		}
	}
	if strings.Contains(f.writes[0], "added") || !strings.Contains(f.writes[1], "\nadded             worker-f ") {
		t.Errorf("the second listing does not show the record added after the first:\n%s\n%s", f.writes[0], f.writes[1])
	}
}

// On a terminal each frame is one write that homes the cursor and writes
// over the last frame, clearing each line's rest and what lies below:
// never the whole screen, which would flicker.
func TestLsWatchFrameRedrawsInPlace(t *testing.T) {
	const url = "memory://ls-frame"
	o := lsStore(t, url)
	st, err := storeurl.Open[rawMeta](t.Context(), o, url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.List[rawMeta](t.Context(), st, "billing/")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeFrame(&b, "text", time.Second, true, 0, 0, l, nil, lsNow); err != nil {
		t.Fatal(err)
	}
	const want = "\x1b[H2026-12-05 06:00:00Z  every 1s  (Ctrl-C to stop)  2 elections\x1b[K\n" +
		"NAME              HOLDER    TOKEN  SINCE  RENEWED  TRANSITIONS  METADATA\x1b[K\n" +
		"billing/cron      worker-b  7      3h07m  2s       6            {\"addr\":\"10.0.0.7:8080\"}\x1b[K\n" +
		"billing/invoices  worker-a  3      4m05s  1s       2            {\"addr\":\"10.0.0.3:8080\",\"zone\":\"eu-west…\x1b[K\n" +
		"\x1b[J"
	if b.String() != want {
		t.Errorf("frame = %q\nwant    %q", b.String(), want)
	}
	b.Reset()
	if err := writeFrame(&b, "text", time.Second, true, 0, 0, nil, errors.New("connection refused"), lsNow); err != nil {
		t.Fatal(err)
	}
	if want := "\x1b[H2026-12-05 06:00:00Z  every 1s  (Ctrl-C to stop)\x1b[K\nerror: connection refused\x1b[K\n\x1b[J"; b.String() != want {
		t.Errorf("frame of a failed listing = %q\nwant %q", b.String(), want)
	}
}

// Ages print in two units at most, whatever their size or sign.
func TestFormatAge(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{999 * time.Millisecond, "0s"},
		{59 * time.Second, "59s"},
		{61 * time.Second, "1m01s"},
		{time.Hour + 59*time.Minute + 59*time.Second, "1h59m"},
		{49 * time.Hour, "2d01h"},
		{-3 * time.Second, "-3s"},
		{time.Duration(-1 << 63), "-106751d23h"},
		{time.Duration(1<<63 - 1), "106751d23h"},
	} {
		if got := formatAge(c.d); got != c.want {
			t.Errorf("formatAge(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// A frame taller or wider than the screen is cut to it, the last row left
// empty, so that the screen never scrolls and the next frame lands on it.
func TestLsWatchFrameFitsTheScreen(t *testing.T) {
	const url = "memory://ls-fit"
	o := lsStore(t, url)
	st, err := storeurl.Open[rawMeta](t.Context(), o, url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.List[rawMeta](t.Context(), st, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeFrame(&b, "text", time.Second, true, 31, 6, l, nil, lsNow); err != nil {
		t.Fatal(err)
	}
	const want = "\x1b[H2026-12-05 06:00:00Z  every 1s\x1b[K\n" +
		"NAME              HOLDER      \x1b[K\n" +
		"billing/cron      worker-b    \x1b[K\n" +
		"billing/invoices  worker-a    \x1b[K\n" +
		"… 4 more rows: narrow the list\x1b[K\n" +
		"\x1b[J"
	if b.String() != want {
		t.Errorf("frame = %q\nwant    %q", b.String(), want)
	}
}

// A holder of wide characters (CJK: two columns each on a terminal) is
// cut to the screen's width in columns, not in characters: a line wider
// than the screen wraps, the screen scrolls, and the next frame no longer
// lands on this one.
func TestLsWatchFrameOfWideCharactersFitsTheScreen(t *testing.T) {
	o := &storeurl.Opener{}
	const url = "memory://ls-wide"
	putRaw(t, o, url, "job", lease.Record[[]byte]{
		Holder: strings.Repeat("漢", store.MaxHolderBytes/3), Token: 1, AcquiredAt: lsNow, RenewedAt: lsNow,
		LeaseDuration: time.Minute, Metadata: []byte("null"),
	})
	st, err := storeurl.Open[rawMeta](t.Context(), o, url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.List[rawMeta](t.Context(), st, "")
	if err != nil {
		t.Fatal(err)
	}
	const cols = 40
	var b bytes.Buffer
	if err := writeFrame(&b, "text", time.Second, true, cols, 10, l, nil, lsNow); err != nil {
		t.Fatal(err)
	}
	frame := strings.NewReplacer("\x1b[H", "", "\x1b[K", "", "\x1b[J", "").Replace(b.String())
	for _, line := range strings.Split(strings.TrimSuffix(frame, "\n"), "\n") {
		w := 0
		for _, r := range line {
			if r >= 0x4e00 && r <= 0x9fff {
				w += 2
			} else {
				w++
			}
		}
		if w > cols-1 {
			t.Errorf("line %q is %d columns wide on a screen of %d: it wraps", line, w, cols)
		}
	}
}
