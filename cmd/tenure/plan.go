package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/tenure-go/tenure/lease"
)

const planUsage = `usage: tenure plan --store-outage D --failover D [flags]

Derive an election's timings from what you can tolerate (lease.Plan) and
print them as tenure run's timing flags and as TENURE_* variables, with
what they guarantee: the worst-case crash failover, the graceful
handover, the store outage the leader survives and the store writes a
minute for the elections given.

flags:
`

// runPlan prints the Config that lease.Plan derives from the flags, and
// its report.
func runPlan(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var p lease.Plan
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&p.StoreOutage, "store-outage", 0, "how long the store may be unreachable without the leader losing its term (required)")
	fs.Float64Var(&p.ClockDrift, "clock-drift", 0, "the largest rate at which a clock may run fast or slow, in [0, 1): 0.05 is 5%")
	fs.DurationVar(&p.Failover, "failover", 0, "the longest an election may go without a leader after its leader crashes (required)")
	fs.DurationVar(&p.Latency, "latency", 0, "the one-way store latency in calm times")
	fs.IntVar(&p.Elections, "elections", 1, "how many elections share the store, for the writes a minute")
	fs.Usage = func() {
		fmt.Fprint(stderr, planUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitCode(2) // flag has printed the error and the usage
	}
	if fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected argument %q: tenure plan takes flags only", fs.Arg(0))}
	}
	c, rep, err := p.Config()
	if err != nil {
		return planFlagError{err}
	}
	fmt.Fprintf(stdout, "tenure run flags:\n  --lease-duration %v --renew-deadline %v --retry-interval %v --backend-timeout %v\n",
		c.LeaseDuration, c.RenewDeadline, c.RetryInterval, c.BackendTimeout)
	fmt.Fprintln(stdout, "environment:")
	for _, e := range []struct{ suffix, value string }{
		{lease.EnvLeaseDuration, c.LeaseDuration.String()},
		{lease.EnvRenewDeadline, c.RenewDeadline.String()},
		{lease.EnvRetryInterval, c.RetryInterval.String()},
		{lease.EnvRetryJitter, strconv.FormatFloat(c.RetryJitter, 'g', -1, 64)},
		{lease.EnvBackendTimeout, c.BackendTimeout.String()},
		{lease.EnvErrorInterval, c.ErrorInterval.String()},
	} {
		fmt.Fprintf(stdout, "  TENURE_%s=%s\n", e.suffix, e.value)
	}
	fmt.Fprintln(stdout, "guarantees:")
	fmt.Fprintf(stdout, "  crash failover    ≤ %v (worst case, clock drift %v, latency %v)\n", ceilMilli(rep.Failover), p.ClockDrift, p.Latency)
	fmt.Fprintf(stdout, "  graceful handover ≤ %v (six one-way latencies of %v and 1ms; set --latency)\n", ceilMilli(rep.Handover), p.Latency)
	fmt.Fprintf(stdout, "  store outage      ≥ %v survived by the leader\n", rep.StoreOutage.Truncate(time.Millisecond))
	elections := "elections"
	if p.Elections == 1 {
		elections = "election"
	}
	fmt.Fprintf(stdout, "  store writes      ≤ %.0f a minute (renewals of %d %s)\n", rep.WritesPerMinute, p.Elections, elections)
	return nil
}

// ceilMilli rounds d, at most lease.MaxDuration, up to a millisecond: a
// bound printed shorter would promise too much.
func ceilMilli(d time.Duration) time.Duration {
	if r := d.Truncate(time.Millisecond); r != d {
		return r + time.Millisecond
	}
	return d
}

// planFields are lease.Plan's fields as its errors name them, with the
// flag that sets each.
var (
	planFields = regexp.MustCompile(`\b(StoreOutage|ClockDrift|Failover|Latency|Elections)\b`)
	planFlags  = map[string]string{"StoreOutage": "--store-outage", "ClockDrift": "--clock-drift", "Failover": "--failover", "Latency": "--latency", "Elections": "--elections"}
)

// planFlagError is an error of lease.Plan whose text names the flags
// that set the fields it names.
type planFlagError struct{ err error }

func (e planFlagError) Error() string {
	return planFields.ReplaceAllStringFunc(e.err.Error(), func(f string) string { return planFlags[f] })
}

func (e planFlagError) Unwrap() error { return e.err }
