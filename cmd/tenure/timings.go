package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tenure-go/tenure/lease"
)

// timingFlags are the timing flags of a command that makes an elector:
// each sets the lease.Config field of its name, over the TENURE_*
// environment variables.
type timingFlags struct {
	leaseDuration, renewDeadline, retryInterval, backendTimeout time.Duration
	set                                                         map[string]bool // the flags given
}

// timingFlag ties a timing flag to its lease.Config field and to the
// suffix of its environment variables.
type timingFlag struct {
	flag, field, env string
	value            func(*lease.Config) *time.Duration // nil for RetryJitter
	given            func(*timingFlags) time.Duration   // the flag's value; nil without a flag
}

// timingFlagList is every timing flag, with the fields that have none
// (their values come from the environment or the defaults), for error
// messages.
var timingFlagList = []timingFlag{
	{"lease-duration", "LeaseDuration", lease.EnvLeaseDuration,
		func(c *lease.Config) *time.Duration { return &c.LeaseDuration },
		func(t *timingFlags) time.Duration { return t.leaseDuration }},
	{"renew-deadline", "RenewDeadline", lease.EnvRenewDeadline,
		func(c *lease.Config) *time.Duration { return &c.RenewDeadline },
		func(t *timingFlags) time.Duration { return t.renewDeadline }},
	{"retry-interval", "RetryInterval", lease.EnvRetryInterval,
		func(c *lease.Config) *time.Duration { return &c.RetryInterval },
		func(t *timingFlags) time.Duration { return t.retryInterval }},
	{"backend-timeout", "BackendTimeout", lease.EnvBackendTimeout,
		func(c *lease.Config) *time.Duration { return &c.BackendTimeout },
		func(t *timingFlags) time.Duration { return t.backendTimeout }},
	{"", "ErrorInterval", lease.EnvErrorInterval, func(c *lease.Config) *time.Duration { return &c.ErrorInterval }, nil},
	{"", "RetryJitter", lease.EnvRetryJitter, nil, nil},
}

// define adds the timing flags to fs.
func (t *timingFlags) define(fs *flag.FlagSet) {
	def := lease.DefaultConfig()
	fs.DurationVar(&t.leaseDuration, "lease-duration", 0, fmt.Sprintf("LeaseDuration: how long followers wait for a lease nobody renews before taking it over (default $TENURE_LEASE_DURATION, or %v)", def.LeaseDuration))
	fs.DurationVar(&t.renewDeadline, "renew-deadline", 0, fmt.Sprintf("RenewDeadline: how long the leader keeps leading after its last successful renewal; below --lease-duration (default $TENURE_RENEW_DEADLINE, or %v)", def.RenewDeadline))
	fs.DurationVar(&t.retryInterval, "retry-interval", 0, fmt.Sprintf("RetryInterval: the pause between renewals, and between followers' polls; below --renew-deadline (default $TENURE_RETRY_INTERVAL, or %v)", def.RetryInterval))
	fs.DurationVar(&t.backendTimeout, "backend-timeout", 0, fmt.Sprintf("BackendTimeout: the bound on each store operation; below --renew-deadline (default $TENURE_BACKEND_TIMEOUT, or %v)", def.BackendTimeout))
}

// visit notes which timing flags fs was given.
func (t *timingFlags) visit(fs *flag.FlagSet) {
	t.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { t.set[f.Name] = true })
}

// config returns the timings of the election name: the defaults, then the
// TENURE_* variables (read with lookup), then the flags given. ok is false
// when no timing flag was given: the elector then reads the variables
// itself. A Config that breaks a rule of lease.Config.Validate is an error
// that says where each value involved came from: a flag, a variable or the
// default.
func (t *timingFlags) config(name string, lookup lease.LookupFunc) (cfg lease.Config, ok bool, err error) {
	if !slices.ContainsFunc(timingFlagList, func(f timingFlag) bool { return f.flag != "" && t.set[f.flag] }) {
		return lease.Config{}, false, nil
	}
	s, err := lease.Load(name, lease.DefaultConfig(), lookup)
	if err != nil {
		return lease.Config{}, false, err
	}
	cfg = s.Config
	for _, f := range timingFlagList {
		if f.flag != "" && t.set[f.flag] {
			*f.value(&cfg) = f.given(t)
		}
	}
	if err := cfg.Validate(); err != nil {
		return lease.Config{}, false, fmt.Errorf("timings: %w (%s)", err, t.sources(name, cfg, err.Error(), lookup))
	}
	return cfg, true, nil
}

// sources says where the value of each field that msg names came from.
func (t *timingFlags) sources(name string, cfg lease.Config, msg string, lookup lease.LookupFunc) string {
	return configSources(name, cfg, msg, lookup, func(field string) string {
		for _, f := range timingFlagList {
			if f.field == field && f.flag != "" && t.set[f.flag] {
				return "--" + f.flag
			}
		}
		return ""
	})
}

// configSources says where the value of each lease.Config field that msg
// names came from: the flag flagFor returns for it (none: ""), else the
// environment variable of the election name that set it, else the
// default.
func configSources(name string, cfg lease.Config, msg string, lookup lease.LookupFunc, flagFor func(field string) string) string {
	var out []string
	for _, f := range timingFlagList {
		if !strings.Contains(msg, f.field) {
			continue
		}
		var v any = cfg.RetryJitter
		if f.value != nil {
			v = *f.value(&cfg)
		}
		out = append(out, fmt.Sprintf("%s %v from %s", f.field, v, configSource(name, f, lookup, flagFor)))
	}
	return strings.Join(out, ", ")
}

// configSource is where field f's value came from: its flag, the variable
// that set it, or the default.
func configSource(name string, f timingFlag, lookup lease.LookupFunc, flagFor func(field string) string) string {
	if fl := flagFor(f.field); fl != "" {
		return fl
	}
	if lookup != nil {
		for _, key := range []string{lease.EnvPrefix(name) + f.env, "TENURE_" + f.env} {
			if v, ok := lookup(key); ok && strings.TrimSpace(v) != "" {
				return key
			}
		}
	}
	return "the default"
}

// warnUnknownEnv prints a warning, as command's line, for each TENURE_
// variable of environ that no part of Tenure reads (lease.UnknownEnv),
// with the variable it is likely a misspelling of (lease.SuggestEnv).
// tenure run leaves this to lead.New, which logs the same warning.
func warnUnknownEnv(stderr io.Writer, command string, environ []string) {
	for _, key := range lease.UnknownEnv(environ) {
		line := fmt.Sprintf("%s: warning: the environment sets %s, which Tenure does not read", command, key)
		if s := lease.SuggestEnv(key); s != "" {
			line += ": misspelt " + s + "?"
		}
		fmt.Fprintln(stderr, line)
	}
}
