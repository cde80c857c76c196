package lease

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Errors returned by this package. Match them with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every error that Config.Validate returns.
	ErrInvalidConfig = errors.New("lease: invalid config")
	// ErrInvalidEnv is wrapped by every error about an environment variable
	// whose value cannot be parsed.
	ErrInvalidEnv = errors.New("lease: invalid environment variable")
	// ErrInvalidPlan is wrapped by every error that Plan.Config returns:
	// a requirement out of range or one no Config can meet.
	ErrInvalidPlan = errors.New("lease: invalid plan")
)

// Bounds on what a Config and a stored record may hold. They keep every sum
// of times and every new token inside its type: an accepted Config or record
// never makes an elector's arithmetic overflow.
const (
	// MaxDuration is the longest duration any Config field, and any stored
	// record's LeaseDuration, may hold: 7 days. Leases in real deployments
	// last seconds to minutes; a week leaves room for a lock that is meant to
	// outlive a weekend, while the sum of a monotonic clock (centuries of
	// room) and several such durations stays far below math.MaxInt64.
	MaxDuration = 7 * 24 * time.Hour
	// MaxToken is the largest fencing token (and Transitions count) a record
	// may hold: 2^53-1, the largest integer a float64 holds exactly, so that
	// Lua in Redis, JSON readers in JavaScript and every SQL numeric type
	// hold it without loss. Issued at a million terms a second it lasts 285
	// years. A store refuses to issue a token above it.
	MaxToken uint64 = 1<<53 - 1
)

// Floors on a Config's durations. They make a busy loop impossible: an
// elector sends at most a few store requests per RetryInterval (see
// MaxRequestsPerSecond) and logs a repeating problem at most once per
// ErrorInterval (see MaxLinesPerErrorInterval), so with every accepted
// Config it stays at a few thousand requests and ten log lines a second at
// worst.
const (
	// MinDuration is the shortest LeaseDuration, RenewDeadline,
	// RetryInterval and BackendTimeout: 1ms. No store answers over a
	// network in less, so a shorter BackendTimeout fails every operation
	// and a shorter RetryInterval only retries faster than anything can
	// change. Since RenewDeadline must exceed RetryInterval and
	// BackendTimeout, and LeaseDuration must exceed RenewDeadline, both are
	// in fact above 1ms.
	MinDuration = time.Millisecond
	// MinErrorInterval is the shortest ErrorInterval: 1s. A repeating
	// error logged more often than once a second helps no reader and
	// floods every log pipeline.
	MinErrorInterval = time.Second
	// MaxRequestsPerSecond bounds the store requests (reads, swaps and
	// watch starts) an elector sends in any second under any accepted
	// Config and any behaviour of a store that does not forge watch
	// events: at most four per RetryInterval, and RetryInterval is at least
	// MinDuration. An elector on the smallest Config sends about 1,000 a
	// second to a store that answers and up to about 2,850 to one that
	// refuses some or all of them (TestSmallestConfigStaysWithinTheRequestBound
	// in package lead measures it).
	MaxRequestsPerSecond = 4 * int(time.Second/MinDuration)
	// MaxLinesPerErrorInterval bounds the log lines an elector writes for
	// repeating problems in any ErrorInterval: one per kind (a failed read,
	// acquire, renewal, release or watch; a corrupt record; a rollback;
	// exhausted tokens; a long wait; a contradicted watch). On top of them
	// an elector logs one line when a term starts and one when it ends, and
	// a few when it starts. With ErrorInterval at least MinErrorInterval,
	// that is at most ten a second. The failed runs of lead.Elector.Every,
	// errors of the application's task, are logged apart from these: at
	// most one line per ErrorInterval for each call of Every.
	MaxLinesPerErrorInterval = 10
)

// Config holds the timings of one election. The zero Config is not valid:
// start from DefaultConfig and change what you need.
type Config struct {
	// LeaseDuration is how long followers wait, by their own clock, after
	// they first saw the current revision of a held lease before they try to
	// take it over.
	LeaseDuration time.Duration
	// RenewDeadline is how long a leader keeps believing it leads after it
	// sent its last successful renewal. It must be shorter than
	// LeaseDuration; the difference absorbs clock-rate drift and scheduling
	// delay.
	RenewDeadline time.Duration
	// RetryInterval is the pause between attempts: renewals by the leader,
	// polls by followers.
	RetryInterval time.Duration
	// RetryJitter spreads RetryInterval: each pause is drawn uniformly from
	// [RetryInterval, RetryInterval*(1+RetryJitter)). It lies in [0, 1).
	RetryJitter float64
	// BackendTimeout bounds each store operation.
	BackendTimeout time.Duration
	// ErrorInterval is the least time between two log records of the same
	// repeating error.
	ErrorInterval time.Duration
}

// DefaultConfig returns the default timings: a 15s lease, a 10s renew
// deadline, a 2s retry interval with 10% jitter, a 5s backend timeout and
// errors logged at most every 30s.
func DefaultConfig() Config {
	return Config{
		LeaseDuration:  15 * time.Second,
		RenewDeadline:  10 * time.Second,
		RetryInterval:  2 * time.Second,
		RetryJitter:    0.1,
		BackendTimeout: 5 * time.Second,
		ErrorInterval:  30 * time.Second,
	}
}

// Validate reports every rule the Config breaks, each in an error that names
// the field and the rule and wraps ErrInvalidConfig. It returns nil for a
// valid Config.
//
// The rules: every duration is at most MaxDuration, and at least
// MinDuration (1ms), ErrorInterval at least MinErrorInterval (1s), so that
// no Config makes an elector spin (see MinDuration);
// RenewDeadline < LeaseDuration;
// RetryInterval*(1+RetryJitter) < RenewDeadline; BackendTimeout <
// RenewDeadline; 0 <= RetryJitter < 1.
func (c Config) Validate() error { return c.validate(Sources{}) }

// validate is Validate, with each field named together with where its
// value came from (see Sources). A field without a source is named alone.
func (c Config) validate(sources Sources) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	// from says where the fields got their values: " (from X)" after a
	// value alone, ", from X" inside a parenthesis.
	from := func(inside bool, fields ...string) string {
		var srcs []string
		for _, f := range fields {
			if src := *sources.field(f); src != "" {
				srcs = append(srcs, src)
			}
		}
		switch {
		case len(srcs) == 0:
			return ""
		case inside:
			return ", from " + strings.Join(srcs, " and ")
		default:
			return " (from " + strings.Join(srcs, " and ") + ")"
		}
	}
	positive := []struct {
		name, floorName string
		d, floor        time.Duration
	}{
		{"LeaseDuration", "lease.MinDuration", c.LeaseDuration, MinDuration},
		{"RenewDeadline", "lease.MinDuration", c.RenewDeadline, MinDuration},
		{"RetryInterval", "lease.MinDuration", c.RetryInterval, MinDuration},
		{"BackendTimeout", "lease.MinDuration", c.BackendTimeout, MinDuration},
		{"ErrorInterval", "lease.MinErrorInterval", c.ErrorInterval, MinErrorInterval},
	}
	allPositive := true
	for _, p := range positive {
		switch {
		case p.d < p.floor:
			bad("%s is %v%s, must be at least %v (%s)", p.name, p.d, from(false, p.name), p.floor, p.floorName)
			allPositive = false
		case p.d > MaxDuration:
			bad("%s is %v%s, must be at most %v (lease.MaxDuration)", p.name, p.d, from(false, p.name), MaxDuration)
			allPositive = false
		}
	}
	jitterOK := c.RetryJitter >= 0 && c.RetryJitter < 1 // false for NaN
	if !jitterOK {
		bad("RetryJitter is %v%s, must be in [0, 1)", c.RetryJitter, from(false, "RetryJitter"))
	}
	if !allPositive {
		return errors.Join(errs...)
	}
	if c.RenewDeadline >= c.LeaseDuration {
		bad("RenewDeadline (%v%s) must be < LeaseDuration (%v%s)", c.RenewDeadline, from(true, "RenewDeadline"), c.LeaseDuration, from(true, "LeaseDuration"))
	}
	if jitterOK {
		if maxRetry := c.MaxRetryInterval(); maxRetry >= c.RenewDeadline {
			bad("RetryInterval*(1+RetryJitter) (%v%s) must be < RenewDeadline (%v%s)", maxRetry, from(true, "RetryInterval", "RetryJitter"), c.RenewDeadline, from(true, "RenewDeadline"))
		}
	}
	if c.BackendTimeout >= c.RenewDeadline {
		bad("BackendTimeout (%v%s) must be < RenewDeadline (%v%s)", c.BackendTimeout, from(true, "BackendTimeout"), c.RenewDeadline, from(true, "RenewDeadline"))
	}
	return errors.Join(errs...)
}

// MaxRetryInterval is the longest pause between two attempts:
// RetryInterval*(1+RetryJitter).
func (c Config) MaxRetryInterval() time.Duration {
	return c.RetryInterval + time.Duration(float64(c.RetryInterval)*c.RetryJitter)
}

// Environment variable suffixes read by Load, after "TENURE_" or
// "TENURE_<NAME>_".
const (
	EnvLeaseDuration  = "LEASE_DURATION"
	EnvRenewDeadline  = "RENEW_DEADLINE"
	EnvRetryInterval  = "RETRY_INTERVAL"
	EnvRetryJitter    = "RETRY_JITTER"
	EnvBackendTimeout = "BACKEND_TIMEOUT"
	EnvErrorInterval  = "ERROR_INTERVAL"
	EnvIdentity       = "IDENTITY"
)

// envFields maps the suffixes of the timing variables to the fields of
// Config they set.
var envFields = map[string]string{
	EnvLeaseDuration:  "LeaseDuration",
	EnvRenewDeadline:  "RenewDeadline",
	EnvRetryInterval:  "RetryInterval",
	EnvRetryJitter:    "RetryJitter",
	EnvBackendTimeout: "BackendTimeout",
	EnvErrorInterval:  "ErrorInterval",
}

// EnvPrefix returns the prefix of the per-name environment variables of an
// election name: "TENURE_" followed by the name upper-cased, with every
// character other than an ASCII letter or digit replaced by '_', and a final
// '_'. EnvPrefix("billing-cron") is "TENURE_BILLING_CRON_".
func EnvPrefix(name string) string {
	var b strings.Builder
	b.WriteString("TENURE_")
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	b.WriteByte('_')
	return b.String()
}

// LookupFunc looks up an environment variable, as os.LookupEnv does.
type LookupFunc func(key string) (string, bool)

// Settings is what Load reads from the environment.
type Settings struct {
	// Config is the base Config with every variable that was set applied.
	Config Config
	// Identity is the identity from TENURE_<NAME>_IDENTITY or
	// TENURE_IDENTITY (see LoadIdentity), or "" when neither is set.
	Identity string
	// Sources names the variable that set each field of Config, with its
	// value; Validate names them in its errors.
	Sources Sources
}

// Sources says where the value of each field of a Config came from: a
// variable with its value ("TENURE_LEASE_DURATION=-5s"), a key of a file
// ("key lease_duration in /etc/app/tenure.json"), or "" when nothing set
// it.
type Sources struct {
	LeaseDuration  string
	RenewDeadline  string
	RetryInterval  string
	RetryJitter    string
	BackendTimeout string
	ErrorInterval  string
}

// field returns a pointer to the source of the Config field name, or nil.
func (s *Sources) field(name string) *string {
	switch name {
	case "LeaseDuration":
		return &s.LeaseDuration
	case "RenewDeadline":
		return &s.RenewDeadline
	case "RetryInterval":
		return &s.RetryInterval
	case "RetryJitter":
		return &s.RetryJitter
	case "BackendTimeout":
		return &s.BackendTimeout
	case "ErrorInterval":
		return &s.ErrorInterval
	}
	return nil
}

// Validate is Config.Validate, with each field that a variable set named
// together with the variable and its value: "lease: invalid config:
// LeaseDuration is -5s (from TENURE_LEASE_DURATION=-5s), must be at least
// 1ms (lease.MinDuration)".
func (s Settings) Validate() error { return s.Config.validate(s.Sources) }

// Load applies environment variables to base for the election name and
// returns the result. For each setting the per-name variable
// (TENURE_<NAME>_LEASE_DURATION) wins over the shared one
// (TENURE_LEASE_DURATION), which wins over base. Durations use Go syntax
// ("15s", "1500ms"); RETRY_JITTER is a decimal fraction ("0.1"). A value that
// cannot be parsed is an error naming the variable and wrapping
// ErrInvalidEnv. Load does not validate the result: call the Settings'
// Validate, whose errors name the variable that set each field.
//
// A variable that is set to nothing but spaces, or to nothing at all
// (TENURE_LEASE_DURATION= in a manifest or a .env file), counts as unset,
// as in most tools: the next variable in the order above, or base, applies.
// Values are read with surrounding spaces trimmed.
//
// lookup is usually os.LookupEnv; a nil lookup reads nothing.
func Load(name string, base Config, lookup LookupFunc) (Settings, error) {
	s := Settings{Config: base, Identity: LoadIdentity(name, lookup)}
	var errs []error
	durations := []struct {
		suffix string
		dst    *time.Duration
	}{
		{EnvLeaseDuration, &s.Config.LeaseDuration},
		{EnvRenewDeadline, &s.Config.RenewDeadline},
		{EnvRetryInterval, &s.Config.RetryInterval},
		{EnvBackendTimeout, &s.Config.BackendTimeout},
		{EnvErrorInterval, &s.Config.ErrorInterval},
	}
	set := func(suffix, key, val string) { *s.Sources.field(envFields[suffix]) = key + "=" + val }
	for _, d := range durations {
		key, val, ok := lookupSetting(name, d.suffix, lookup)
		if !ok {
			continue
		}
		v, err := time.ParseDuration(val)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s=%q is not a duration (use Go syntax such as 15s or 1500ms)", ErrInvalidEnv, key, val))
			continue
		}
		*d.dst = v
		set(d.suffix, key, val)
	}
	if key, val, ok := lookupSetting(name, EnvRetryJitter, lookup); ok {
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s=%q is not a number (use a fraction such as 0.1)", ErrInvalidEnv, key, val))
		} else {
			s.Config.RetryJitter = v
			set(EnvRetryJitter, key, val)
		}
	}
	return s, errors.Join(errs...)
}

// LoadIdentity returns the identity that TENURE_<NAME>_IDENTITY or else
// TENURE_IDENTITY sets for the election name, trimmed of spaces, or "" when
// neither is set to anything but spaces. It reads no other variable: a
// caller that sets every timing itself (lead.WithConfig) still takes the
// identity from the environment with it. A nil lookup reads nothing.
func LoadIdentity(name string, lookup LookupFunc) string {
	_, val, _ := lookupSetting(name, EnvIdentity, lookup)
	return val
}

// lookupSetting returns the variable that sets suffix for the election
// name, and its value trimmed of spaces: the per-name variable if it is set
// to something other than spaces, else the shared one. ok is false when
// neither is.
func lookupSetting(name, suffix string, lookup LookupFunc) (key, val string, ok bool) {
	if lookup == nil {
		return "", "", false
	}
	for _, k := range []string{EnvPrefix(name) + suffix, "TENURE_" + suffix} {
		if v, set := lookup(k); set {
			if v = strings.TrimSpace(v); v != "" {
				return k, v, true
			}
		}
	}
	return "", "", false
}

// UnknownEnv returns, sorted, the names of the variables in environ (each
// "KEY=value", as os.Environ returns them) that start with "TENURE_" and
// that no part of Tenure reads: a misspelt TENURE_LEASE_DURATIN, say. A
// variable is known when it ends in "_" and one of the suffixes Load reads
// (EnvLeaseDuration and the others, EnvIdentity included) after
// "TENURE_" or "TENURE_<NAME>_" for any name, so the per-name variables of
// every election are known; and when it is one of the variables that the
// command line (TENURE_STORE; TENURE_TOKEN and TENURE_NAME, which tenure run
// gives its command), the simulator (TENURE_SIM_SEEDS, TENURE_SIM_BUDGET,
// TENURE_SIM_SVG, TENURE_SIM_TRACE, TENURE_SIM_FAULTS, TENURE_SIM_REPRO) or
// Tenure's own tests and scripts read.
func UnknownEnv(environ []string) []string {
	var unknown []string
	for _, kv := range environ {
		key, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(key, "TENURE_") || knownEnv(key) || slices.Contains(unknown, key) {
			continue
		}
		unknown = append(unknown, key)
	}
	slices.Sort(unknown)
	return unknown
}

// envSuffixes are the suffixes Load and LoadIdentity read.
var envSuffixes = []string{EnvLeaseDuration, EnvRenewDeadline, EnvRetryInterval, EnvRetryJitter, EnvBackendTimeout, EnvErrorInterval, EnvIdentity}

// userEnv are the variables other than the timings and identities that
// the command line and the simulator read: the ones SuggestEnv proposes.
var userEnv = []string{"TENURE_STORE", "TENURE_TOKEN", "TENURE_NAME",
	"TENURE_SIM_SEEDS", "TENURE_SIM_BUDGET", "TENURE_SIM_SVG", "TENURE_SIM_TRACE", "TENURE_SIM_FAULTS", "TENURE_SIM_REPRO"}

// SuggestEnv returns the variable that Tenure reads and that key, a
// TENURE_ variable Tenure does not read (see UnknownEnv), is most likely
// a misspelling of, or "" when none is close. A variable is close when at
// most two letters, and at most a third of its suffix's, have to be
// inserted, deleted or replaced to make key: TENURE_LEASE_DURATIN suggests
// TENURE_LEASE_DURATION, and TENURE_BILLING_LEASE_DURATIN suggests
// TENURE_BILLING_LEASE_DURATION, the per-name variable with the name key
// has. It returns "" for a variable Tenure reads and one that does not
// start with "TENURE_".
func SuggestEnv(key string) string {
	rest, ok := strings.CutPrefix(key, "TENURE_")
	if !ok || knownEnv(key) {
		return ""
	}
	best, bestDist := "", maxSuggestDistance+1
	consider := func(candidate, typed, want string) {
		if d := editDistance(typed, want, maxSuggestDistance); d < bestDist && d*3 <= len(want) {
			best, bestDist = candidate, d
		}
	}
	for _, suffix := range envSuffixes {
		// TENURE_<suffix>, then TENURE_<NAME>_<suffix> for each way to
		// read a name at the start of rest.
		consider("TENURE_"+suffix, rest, suffix)
		for i := 1; i < len(rest)-1; i++ {
			if rest[i] == '_' {
				consider("TENURE_"+rest[:i+1]+suffix, rest[i+1:], suffix)
			}
		}
	}
	for _, v := range userEnv {
		consider(v, rest, strings.TrimPrefix(v, "TENURE_"))
	}
	return best
}

// maxSuggestDistance is the largest edit distance at which SuggestEnv
// suggests a variable.
const maxSuggestDistance = 2

// editDistance returns the Levenshtein distance between a and b (in
// bytes), or max+1 when it exceeds max. Its work is bounded by max: strings
// whose lengths differ by more than max are not compared.
func editDistance(a, b string, limit int) int {
	if len(a)-len(b) > limit || len(b)-len(a) > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit+1)
}

// knownEnv reports whether Tenure reads the variable key (see UnknownEnv).
func knownEnv(key string) bool {
	rest := strings.TrimPrefix(key, "TENURE_")
	for _, suffix := range envSuffixes {
		// TENURE_<suffix>, or TENURE_<NAME>_<suffix> with a name.
		if rest == suffix || len(rest) > len(suffix)+1 && strings.HasSuffix(rest, "_"+suffix) {
			return true
		}
	}
	switch key {
	case "TENURE_STORE", "TENURE_TOKEN", "TENURE_NAME",
		"TENURE_SIM_SEEDS", "TENURE_SIM_BUDGET", "TENURE_SIM_SVG", "TENURE_SIM_TRACE", "TENURE_SIM_FAULTS", "TENURE_SIM_REPRO",
		// Tenure's own tests, test harness and scripts.
		"TENURE_DEBUG", "TENURE_REQUIRE_BACKENDS", "TENURE_CACHE", "TENURE_ETCD", "TENURE_KUBE_APISERVER", "TENURE_KUBE_BUILD", "TENURE_KUBE_LOG",
		"TENURE_POSTGRES_BIN", "TENURE_REDIS_SERVER", "TENURE_REDIS_LOG", "TENURE_HANDOVERS", "TENURE_TEST_CHILD", "TENURE_TEST_CHILD_EXIT",
		"TENURE_CHAOS_BACKENDS", "TENURE_CHAOS_DURATION", "TENURE_CHAOS_SEED", "TENURE_CHAOS_SUMMARY", "TENURE_CHAOS_TIMELINE",
		"TENURE_RT_DURATION", "TENURE_RT_SPEED",
		"TENURE_SCALE_CPUPROFILE", "TENURE_SCALE_ELECTIONS", "TENURE_SCALE_HEAPPROFILE", "TENURE_SCALE_MAXOPS", "TENURE_SCALE_OPSTATS",
		"TENURE_SCALE_SETTLE", "TENURE_SCALE_START", "TENURE_SCALE_WAIT", "TENURE_SCALE_WINDOW":
		return true
	}
	return false
}
