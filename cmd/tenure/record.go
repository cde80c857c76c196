package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tenure-go/tenure/internal/ui"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/storeurl"
)

// openers lets tests share memory:// stores between commands run in one
// process; each real process has its own.
type openerKey struct{}

func opener(ctx context.Context) *storeurl.Opener {
	if o, ok := ctx.Value(openerKey{}).(*storeurl.Opener); ok {
		return o
	}
	return &storeurl.Opener{}
}

// rawMeta keeps whatever metadata a record holds, as JSON.
type rawMeta = json.RawMessage

// storeEnv is the environment variable that holds the store URL when
// --store is not given: the URL, password included, then does not appear
// in the process list (/proc/PID/cmdline is readable by every user, the
// environment only by the process's owner).
const storeEnv = "TENURE_STORE"

// storeFlagHelp is the help of --store.
const storeFlagHelp = "store URL (memory://NAME, redis://HOST:PORT, postgres://..., kubernetes://NAMESPACE, etcd://HOST:PORT/PREFIX); default $" + storeEnv

// errNoStore: neither --store nor TENURE_STORE names a store.
var errNoStore = errors.New("--store or " + storeEnv + " is required (memory://NAME, redis://HOST:PORT, postgres://..., kubernetes://NAMESPACE, etcd://HOST:PORT/PREFIX)")

// openStore opens the store that flag (--store) names, or else TENURE_STORE,
// for raw metadata.
func openStore(ctx context.Context, flag string) (storeurl.Store[rawMeta], error) {
	url := flag
	if url == "" {
		url = os.Getenv(storeEnv)
	}
	if url == "" {
		return nil, errNoStore
	}
	return storeurl.Open[rawMeta](ctx, opener(ctx), url)
}

// recordJSON is the JSON shape of `tenure get -o json` and `tenure watch -o json`.
type recordJSON struct {
	Name          string          `json:"name"`
	Revision      uint64          `json:"revision"`
	Holder        string          `json:"holder"`
	Token         uint64          `json:"token"`
	AcquiredAt    *time.Time      `json:"acquiredAt,omitempty"`
	RenewedAt     *time.Time      `json:"renewedAt,omitempty"`
	LeaseDuration string          `json:"leaseDuration"`
	Transitions   uint64          `json:"transitions"`
	Claim         bool            `json:"claim,omitempty"`     // only a claim: its holder does not lead yet (lease.Record's Claim)
	Successor     string          `json:"successor,omitempty"` // a release handed to this identity (lease.Record's Successor)
	Metadata      json.RawMessage `json:"metadata,omitempty"`
}

func toJSON(name string, rec lease.Record[rawMeta], rev lease.Revision) recordJSON {
	j := recordJSON{
		Name: name, Revision: uint64(rev), Holder: rec.Holder, Token: rec.Token,
		LeaseDuration: rec.LeaseDuration.String(), Transitions: rec.Transitions, Metadata: rec.Metadata,
		Claim: rec.Claim && rec.Held(), Successor: rec.Successor,
	}
	j.AcquiredAt, j.RenewedAt = ui.JSONTime(rec.AcquiredAt), ui.JSONTime(rec.RenewedAt)
	if string(j.Metadata) == "null" {
		j.Metadata = nil
	}
	return j
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// printRecord writes a record as text or JSON.
func printRecord(w io.Writer, format, name string, rec lease.Record[rawMeta], rev lease.Revision) error {
	if format == "json" {
		return writeJSONLine(w, toJSON(name, rec, rev))
	}
	holder := printable(rec.Holder)
	if rec.Holder == "" {
		holder = "(none: released)"
		if rec.Successor != "" {
			holder = fmt.Sprintf("(none: released to %s, who may take it at once; others wait %v)", printable(rec.Successor), rec.LeaseDuration)
		}
	}
	if rec.Claim && rec.Held() {
		holder += fmt.Sprintf(" (claim: does not lead yet; it takes the lease with a new token once this record has stood %v, unless another process takes it first)", rec.LeaseDuration)
	}
	meta := "-"
	if m := string(rec.Metadata); m != "" && m != "null" {
		meta = safeJSON(rec.Metadata)
	}
	_, err := fmt.Fprintf(w, "name:         %s\nholder:       %s\ntoken:        %d\nacquired:     %s\nrenewed:      %s\nlease:        %v\ntransitions:  %d\nrevision:     %d\nmetadata:     %s\n",
		printable(name), holder, rec.Token, formatTime(rec.AcquiredAt), formatTime(rec.RenewedAt), rec.LeaseDuration, rec.Transitions, rev, meta)
	return err
}

// storeFlags is the flag set of the commands that read one election's
// record (get, watch): --store, -o, and the one NAME argument.
type storeFlags struct {
	*flag.FlagSet
	url, format *string
}

// newStoreFlags returns the flag set of command, whose usage is usage
// followed by the flags; formatHelp describes -o.
func newStoreFlags(command, usage, formatHelp string, stderr io.Writer) storeFlags {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := storeFlags{
		FlagSet: fs,
		url:     fs.String("store", "", storeFlagHelp),
		format:  fs.String("o", "text", formatHelp),
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return f
}

// exitNoRecord is the exit status of tenure get when the store holds no
// record for the name.
const exitNoRecord = 3

// parse parses args, flags before or after NAME, and returns the election
// NAME.
func (f storeFlags) parse(args []string) (string, error) {
	p, err := parseArgs(f.FlagSet, args, -1)
	if err != nil {
		return "", err
	}
	names := append(p.positional, p.rest...)
	if len(names) != 1 {
		f.Usage()
		return "", fmt.Errorf("want exactly one election NAME, got %d arguments", len(names))
	}
	if *f.format != "text" && *f.format != "json" {
		return "", fmt.Errorf("-o is %q, want text or json", *f.format)
	}
	return names[0], nil
}

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newStoreFlags("get", `usage: tenure get [--store URL] [-o json] NAME

Prints the lease record of the election NAME: holder, fencing token, when
the term was acquired and last renewed, the lease duration, the number of
transitions and the leader's metadata. A record that is only a claim (its
holder created it on a store that may lose records, and does not lead on
it before it has stood a lease) says so after the holder, and has
"claim": true in JSON. A holder or metadata with
characters that are not printable (escape sequences, line breaks) is
shown escaped: quoted, or with \u escapes inside JSON. Flags may come
before or after NAME.

Exit status: 0 when a record was printed (held or released), 3 when the
store holds no record for NAME (with -o json, {"name":"NAME","absent":true}
is printed, as tenure watch -o json prints it), 1 on any other failure.

The store URL comes from --store, or else from the TENURE_STORE
environment variable, which keeps a password out of the process list.

Examples:
  tenure get --store redis://localhost:6379 nightly-report
  tenure get --store postgres://app@db/app -o json nightly-report | jq .holder
  TENURE_STORE=redis://:PASSWORD@localhost:6379 tenure get nightly-report

Flags:
`, "output format: text or json", stderr)
	name, err := fs.parse(args)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, *fs.url)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, rev, err := st.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		if *fs.format == "json" {
			if err := writeJSONLine(stdout, watchEventJSON{Name: name, Absent: true}); err != nil {
				return err
			}
			return exitCode(exitNoRecord)
		}
		return &exitError{code: exitNoRecord, err: fmt.Errorf("no lease record for %q in this store", name)}
	}
	if err != nil {
		return err
	}
	return printRecord(stdout, *fs.format, name, rec, rev)
}

// watchEventJSON is the JSON shape of a watch event that carries no
// record: absent, or unreadable.
type watchEventJSON struct {
	Name     string `json:"name"`
	Revision uint64 `json:"revision,omitempty"`
	Absent   bool   `json:"absent,omitempty"`
	Error    string `json:"error,omitempty"`
}

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newStoreFlags("watch", `usage: tenure watch [--store URL] [-o json] NAME

Prints one line per change of the lease record of NAME (every renewal
included) until interrupted. A watch that breaks (the server restarted,
say) is started again after -interval. Holders and metadata with
characters that are not printable are shown escaped. Flags may come
before or after NAME.

With -o json, every line on stdout is one JSON object, and nothing else
is printed there:
  a record          as tenure get -o json prints it
  no record         {"name":"NAME","absent":true}
  unreadable record {"name":"NAME","revision":R,"error":"why"}
Failures of tenure watch itself (the store cannot be opened, the watch
cannot start) go to stderr, and it exits with status 1.

The store URL comes from --store, or else from the TENURE_STORE
environment variable, which keeps a password out of the process list.

Examples:
  tenure watch --store redis://localhost:6379 nightly-report
  tenure watch --store postgres://app@db/app -o json nightly-report | jq -c 'select(.holder)'

Flags:
`, "output format: text (one line per change) or json (one object per line, see above)", stderr)
	interval := fs.Duration("interval", time.Second, "time before watching again after the watch broke")
	name, err := fs.parse(args)
	if err != nil {
		return err
	}
	if *interval <= 0 {
		return fmt.Errorf("-interval is %v, must be > 0", *interval)
	}
	st, err := openStore(ctx, *fs.url)
	if err != nil {
		return err
	}
	defer st.Close()
	shown := printable(name)
	line := func(ev store.Event[rawMeta]) error {
		if *fs.format == "json" {
			switch {
			case ev.Err != nil:
				return writeJSONLine(stdout, watchEventJSON{Name: name, Revision: uint64(ev.Revision), Error: ev.Err.Error()})
			case ev.Absent:
				return writeJSONLine(stdout, watchEventJSON{Name: name, Absent: true})
			}
			return printRecord(stdout, "json", name, ev.Record, ev.Revision)
		}
		var err error
		switch r := ev.Record; {
		case ev.Err != nil:
			_, err = fmt.Fprintf(stdout, "%s  rev=%d error: %s\n", shown, ev.Revision, oneLine(ev.Err.Error()))
		case ev.Absent:
			_, err = fmt.Fprintf(stdout, "%s  no record\n", shown)
		default:
			holder := field(r.Holder)
			if r.Holder == "" {
				holder = "(released)"
				if r.Successor != "" {
					holder += " successor=" + field(r.Successor)
				}
			}
			if r.Claim && r.Held() {
				holder += " claim=true" // its holder does not lead yet
			}
			_, err = fmt.Fprintf(stdout, "%s  rev=%d holder=%s token=%d transitions=%d renewed=%s\n",
				shown, ev.Revision, holder, r.Token, r.Transitions, formatTime(r.RenewedAt))
		}
		return err
	}
	return watchLoop(ctx, st, name, *interval, line)
}

// watchLoop watches name until ctx ends, passing every event to line. A
// watch that breaks is started again after retry.
func watchLoop(ctx context.Context, w store.Watcher[rawMeta], name string, retry time.Duration, line func(store.Event[rawMeta]) error) error {
	for {
		ch, err := w.Watch(ctx, name)
		if err != nil {
			return err
		}
		for ev := range ch {
			if err := line(ev); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}
