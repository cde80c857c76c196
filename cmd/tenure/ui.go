package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/tenure-go/tenure/internal/ui"
)

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("store", "", storeFlagHelp)
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve the page on (HOST:PORT; port 0 picks a free one)")
	interval := fs.Duration("interval", ui.DefaultInterval, "time between listings, which find new names (and update every record of a store that does not watch)")
	history := fs.Int("history", ui.DefaultHistory, "handovers kept per name")
	maxNames := fs.Int("max-names", ui.DefaultMaxNames, "most names shown; the listing is cut there, in name order")
	maxWatches := fs.Int("max-watches", ui.DefaultMaxWatches, "most names watched at once; the others are updated by the listing")
	var names, hosts stringList
	fs.Var(&names, "name", "an election to show, instead of listing the store (repeat it; for a store that cannot list)")
	fs.Var(&hosts, "allow-host", "a host name the page may be reached by, besides IP addresses and localhost (repeat it)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: tenure ui [--store URL] [--addr 127.0.0.1:8080] [flags] [PREFIX]

Serves a live web page of the elections whose names start with PREFIX
(every election when it is empty): a table of each one's holder (a claim
marked, a released lease shown as released), fencing token, when its
term started, when it was last renewed, its transitions and metadata,
updated as the records change, and a timeline of each name's recent
handovers (new terms and releases, with their instants and tokens).

The page is served from this process only (nothing is fetched from
anywhere else) on 127.0.0.1:8080 by default. It shows every record it
lists to whoever can reach it: serve it on another address only where
that is meant. Requests must address the server by an IP address or
localhost, or by a name given with -allow-host.

The records are listed every -interval (which finds new names) and, on
stores that watch, up to -max-watches of them are watched, so that a
handover shows within a moment. A store that cannot list its records
(a registered scheme without store.Lister) needs the elections named
with -name.

The store URL comes from --store, or else from the TENURE_STORE
environment variable, which keeps a password out of the process list.

Examples:
  tenure ui --store redis://localhost:6379 jobs/
  tenure ui --store kubernetes://default --addr 127.0.0.1:0

Flags:
`)
		fs.PrintDefaults()
	}
	p, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	rest := append(p.positional, p.rest...)
	if len(rest) > 1 {
		fs.Usage()
		return fmt.Errorf("want at most one PREFIX, got %d arguments", len(rest))
	}
	prefix := ""
	if len(rest) == 1 {
		prefix = rest[0]
	}
	if *interval <= 0 {
		return fmt.Errorf("-interval is %v, must be > 0", *interval)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"history", *history}, {"max-names", *maxNames}, {"max-watches", *maxWatches}} {
		if f.v <= 0 {
			return fmt.Errorf("-%s is %d, must be > 0", f.name, f.v)
		}
	}
	st, err := openStore(ctx, *url)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := ui.New(st, ui.Config{
		Prefix: prefix, Names: names, Interval: *interval, History: *history,
		MaxNames: *maxNames, MaxWatches: *maxWatches, Hosts: hosts, Now: time.Now,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("-addr %s: %w", *addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(stderr, "tenure ui: %s is not a loopback address: anyone who can reach it sees every record listed\n", ln.Addr())
	}
	fmt.Fprintf(stderr, "tenure ui: serving http://%s/\n", ln.Addr())
	return ui.Serve(ctx, ln, srv)
}
