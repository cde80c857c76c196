package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
	"golang.org/x/text/width"

	"github.com/tenure-go/tenure/store"
)

// clockKey lets tests fix the time tenure ls computes ages from; each real
// process reads time.Now.
type clockKey struct{}

func clock(ctx context.Context) func() time.Time {
	if now, ok := ctx.Value(clockKey{}).(func() time.Time); ok {
		return now
	}
	return time.Now
}

// ANSI sequences of the live table (ls --watch on a terminal): every frame
// is written over the last one in one write, line by line, each line
// clearing what is left of the old one, then everything below; the screen
// is never blanked, so it does not flicker.
const (
	ansiHome       = "\x1b[H"
	ansiClear      = "\x1b[2J"
	ansiClearLine  = "\x1b[K"
	ansiClearBelow = "\x1b[J"
	ansiHideCursor = "\x1b[?25l"
	ansiShowCursor = "\x1b[?25h"
)

func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeURL := fs.String("store", "", storeFlagHelp)
	format := fs.String("o", "text", "output format: text (a table) or json (one array of the records, as tenure get -o json prints each)")
	sortBy := fs.String("sort", listSorts[0], "order: "+strings.Join(listSorts, ", ")+" (since: the oldest term first; renewed: the longest unrenewed first)")
	match := fs.String("match", "", "list only the names that match this glob (* any characters, / included; ? one; [a-z] a class)")
	watch := fs.Bool("watch", false, "list again every -interval until interrupted: on a terminal, redrawn in place")
	interval := fs.Duration("interval", time.Second, "time between listings with --watch")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: tenure ls [--store URL] [-o json] [--sort KEY] [--match GLOB] [--watch] [PREFIX]

Lists the elections of the store whose names start with PREFIX (every one
without it), as a table: the name, the holder, the fencing token, how
long ago the term began (SINCE) and the lease was last renewed
(RENEWED), the number of transitions, and the leader's metadata (cut to
40 characters). The holder of a released record reads (released); a
claim, whose holder does not lead yet, is marked (claim); a lease its
holder has not renewed for its lease duration is marked (expired). A
record that cannot be read is listed as (unreadable), with why. Holders,
names and metadata with characters that are not printable are shown
escaped. Flags may come before or after PREFIX.

With --watch, the listing is made again every -interval until
interrupted: on a terminal, the table is redrawn in place; otherwise a
table (or, with -o json, an array) is printed per listing.

The store must be able to list its records: every store of Tenure can
(Redis and Kubernetes read the whole prefix or namespace, then filter).
The store URL comes from --store, or else from the TENURE_STORE
environment variable, which keeps a password out of the process list.

Examples:
  tenure ls --store redis://localhost:6379
  tenure ls --store postgres://app@db/app --sort renewed billing/
  tenure ls --store kubernetes://jobs --match '*-cron' -o json | jq '.[].holder'
  tenure ls --store redis://localhost:6379 --watch

Flags:
`)
		fs.PrintDefaults()
	}
	p, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(p.rest) > 0 {
		fs.Usage()
		return fmt.Errorf("want at most one PREFIX, got %d arguments", len(p.positional)+len(p.rest))
	}
	var prefix string
	if len(p.positional) == 1 {
		prefix = p.positional[0]
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("-o is %q, want text or json", *format)
	}
	if err := sortListed(nil, *sortBy); err != nil {
		return err
	}
	if *watch && *interval <= 0 {
		return fmt.Errorf("-interval is %v, must be > 0", *interval)
	}
	keep := func(string) bool { return true }
	if *match != "" {
		if keep, err = globMatcher(*match); err != nil {
			return err
		}
	}
	st, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if store.ListerOf[rawMeta](st) == nil {
		return fmt.Errorf("%s cannot list its records (%T does not implement store.Lister): %w", storeKind(*storeURL), st, store.ErrListUnsupported)
	}
	now := clock(ctx)
	list := func() ([]store.Listed[rawMeta], error) {
		l, err := store.List[rawMeta](ctx, st, prefix)
		if err != nil {
			return nil, err
		}
		kept := l[:0]
		for _, x := range l {
			if keep(x.Name) {
				kept = append(kept, x)
			}
		}
		return kept, sortListed(kept, *sortBy)
	}
	if !*watch {
		l, err := list()
		if err != nil {
			return err
		}
		return printListing(stdout, *format, l, now())
	}
	size, _ := terminal(stdout)
	return watchListing(ctx, stdout, stderr, *format, *interval, size, list, now)
}

// storeKind names the store of rawURL (or TENURE_STORE) by its scheme
// alone, which holds no credential: "the store of scheme memory://".
func storeKind(rawURL string) string {
	if rawURL == "" {
		rawURL = os.Getenv(storeEnv)
	}
	if u, err := url.Parse(rawURL); err == nil && u.Scheme != "" {
		return "the " + printable(u.Scheme) + ":// store"
	}
	return "the store"
}

// printListing prints l as a table (format "text") or as one JSON array on
// one line (format "json"), ages as of now.
func printListing(w io.Writer, format string, l []store.Listed[rawMeta], now time.Time) error {
	if format == "json" {
		return writeJSONLine(w, listingJSON(l))
	}
	return writeListTable(w, listRows(l, now))
}

// listingJSON returns l as tenure ls -o json prints it: each record as
// tenure get -o json prints it, and one that cannot be read as tenure
// watch -o json prints it, {"name":...,"revision":...,"error":...}.
func listingJSON(l []store.Listed[rawMeta]) []any {
	out := make([]any, len(l))
	for i, x := range l {
		if x.Err != nil {
			out[i] = watchEventJSON{Name: x.Name, Revision: uint64(x.Revision), Error: x.Err.Error()}
			continue
		}
		out[i] = toJSON(x.Name, x.Record, x.Revision)
	}
	return out
}

// terminal returns the size of w's screen, in columns and rows (0 when
// unknown), and whether w is a terminal.
func terminal(w io.Writer) (size func() (cols, rows int), ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	return func() (int, int) {
		cols, rows, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0, 0
		}
		return cols, rows
	}, true
}

// watchListing lists every interval until ctx ends, printing each listing:
// on a terminal (size not nil: it returns the screen's size) redrawn in
// place, otherwise one after the other. A listing that fails is shown (on
// stderr, or in place of the table on a terminal) and tried again at the
// next interval, unless the store cannot list at all.
func watchListing(ctx context.Context, stdout, stderr io.Writer, format string, interval time.Duration, size func() (cols, rows int), list func() ([]store.Listed[rawMeta], error), now func() time.Time) error {
	tty := size != nil
	if tty {
		if _, err := io.WriteString(stdout, ansiHideCursor+ansiClear); err != nil {
			return err
		}
		defer func() { _, _ = io.WriteString(stdout, ansiShowCursor) }()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		l, err := list()
		switch {
		case errors.Is(err, store.ErrListUnsupported):
			return err
		case ctx.Err() != nil:
			return nil
		case err != nil && !tty:
			fmt.Fprintf(stderr, "tenure ls: %s\n", oneLine(err.Error()))
		default:
			var cols, rows int
			if tty {
				cols, rows = size()
			}
			if werr := writeFrame(stdout, format, interval, tty, cols, rows, l, err, now()); werr != nil {
				return werr
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// writeFrame writes one listing of watchListing in one write: on a
// terminal (tty), a header line and the table (or the error err) over the
// last frame, cut to the screen's cols and rows when known (not 0), so
// that it never scrolls; otherwise the table followed by a blank line, or
// with -o json the array.
func writeFrame(w io.Writer, format string, interval time.Duration, tty bool, cols, rows int, l []store.Listed[rawMeta], err error, now time.Time) error {
	var b bytes.Buffer
	if !tty {
		if perr := printListing(&b, format, l, now); perr != nil {
			return perr
		}
		if format != "json" {
			b.WriteByte('\n')
		}
		_, werr := w.Write(b.Bytes())
		return werr
	}
	fmt.Fprintf(&b, "%s  every %v  (Ctrl-C to stop)", now.UTC().Format("2006-01-02 15:04:05Z"), interval)
	if err == nil {
		fmt.Fprintf(&b, "  %d elections", len(l))
	}
	b.WriteByte('\n')
	if err != nil {
		fmt.Fprintf(&b, "error: %s\n", oneLine(err.Error()))
	} else if perr := printListing(&b, format, l, now); perr != nil {
		return perr
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	// The last row stays empty: a line ending there would scroll the
	// screen, and the next frame would not land on this one.
	if rows > 1 && len(lines) > rows-1 {
		more := len(lines) - (rows - 2)
		lines = append(lines[:rows-2], fmt.Sprintf("… %d more rows: narrow the listing with PREFIX or --match", more))
	}
	var frame strings.Builder
	frame.WriteString(ansiHome)
	for _, line := range lines {
		if cols > 1 {
			line = cut(line, cols-1)
		}
		frame.WriteString(line + ansiClearLine + "\n")
	}
	frame.WriteString(ansiClearBelow)
	_, werr := io.WriteString(w, frame.String())
	return werr
}

// cut returns s cut to at most n columns of a terminal, where an East
// Asian wide or fullwidth character takes two: a holder of such
// characters, cut to n characters, would be wider than the screen.
func cut(s string, n int) string {
	w := 0
	for i, r := range s {
		rw := 1
		if k := width.LookupRune(r).Kind(); k == width.EastAsianWide || k == width.EastAsianFullwidth {
			rw = 2
		}
		if w+rw > n {
			return s[:i]
		}
		w += rw
	}
	return s
}
