package lease_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
)

func TestDefaultConfigIsValid(t *testing.T) {
	c := lease.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := lease.Config{
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryInterval: 2 * time.Second,
		RetryJitter: 0.1, BackendTimeout: 5 * time.Second, ErrorInterval: 30 * time.Second,
	}
	if c != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", c, want)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*lease.Config)
		want   []string // substrings of the error; nil means valid
	}{
		{"default", func(*lease.Config) {}, nil},
		{"zero lease", func(c *lease.Config) { c.LeaseDuration = 0 }, []string{"LeaseDuration is 0s, must be at least 1ms (lease.MinDuration)"}},
		{"negative renew", func(c *lease.Config) { c.RenewDeadline = -time.Second }, []string{"RenewDeadline is -1s, must be at least 1ms (lease.MinDuration)"}},
		{"zero retry", func(c *lease.Config) { c.RetryInterval = 0 }, []string{"RetryInterval is 0s, must be at least 1ms (lease.MinDuration)"}},
		{"zero backend timeout", func(c *lease.Config) { c.BackendTimeout = 0 }, []string{"BackendTimeout is 0s, must be at least 1ms (lease.MinDuration)"}},
		{"zero error interval", func(c *lease.Config) { c.ErrorInterval = 0 }, []string{"ErrorInterval is 0s, must be at least 1s (lease.MinErrorInterval)"}},
		{"nanosecond timings", func(c *lease.Config) {
			*c = lease.Config{LeaseDuration: 4, RenewDeadline: 3, RetryInterval: 1, RetryJitter: 0, BackendTimeout: 1, ErrorInterval: 1}
		}, []string{"LeaseDuration is 4ns, must be at least 1ms", "RenewDeadline is 3ns, must be at least 1ms", "RetryInterval is 1ns, must be at least 1ms",
			"BackendTimeout is 1ns, must be at least 1ms", "ErrorInterval is 1ns, must be at least 1s"}},
		{"retry just below the floor", func(c *lease.Config) { c.RetryInterval = lease.MinDuration - 1 }, []string{"RetryInterval is 999.999µs, must be at least 1ms (lease.MinDuration)"}},
		{"backend timeout just below the floor", func(c *lease.Config) { c.BackendTimeout = lease.MinDuration - 1 }, []string{"BackendTimeout is 999.999µs, must be at least 1ms"}},
		{"error interval just below the floor", func(c *lease.Config) { c.ErrorInterval = lease.MinErrorInterval - 1 }, []string{"ErrorInterval is 999.999999ms, must be at least 1s (lease.MinErrorInterval)"}},
		{"the smallest config", func(c *lease.Config) { *c = smallestConfig() }, nil},
		{"lease must exceed the smallest renew deadline", func(c *lease.Config) { *c = smallestConfig(); c.LeaseDuration-- }, []string{"RenewDeadline (1.000001ms) must be < LeaseDuration (1.000001ms)"}},
		{"renew equals lease", func(c *lease.Config) { c.RenewDeadline = c.LeaseDuration }, []string{"RenewDeadline (15s) must be < LeaseDuration (15s)"}},
		{"renew 1ns below lease", func(c *lease.Config) { c.RenewDeadline = c.LeaseDuration - 1 }, nil},
		{"retry with jitter reaches renew", func(c *lease.Config) { c.RetryInterval = 9 * time.Second; c.RetryJitter = 1.0 / 9 }, []string{"RetryInterval*(1+RetryJitter)"}},
		{"retry just below renew", func(c *lease.Config) { c.RetryInterval = 10*time.Second - 1; c.RetryJitter = 0 }, nil},
		{"retry equals renew", func(c *lease.Config) { c.RetryInterval = 10 * time.Second; c.RetryJitter = 0 }, []string{"RetryInterval*(1+RetryJitter) (10s) must be < RenewDeadline (10s)"}},
		{"backend timeout equals renew", func(c *lease.Config) { c.BackendTimeout = c.RenewDeadline }, []string{"BackendTimeout (10s) must be < RenewDeadline (10s)"}},
		{"negative jitter", func(c *lease.Config) { c.RetryJitter = -0.1 }, []string{"RetryJitter is -0.1, must be in [0, 1)"}},
		{"jitter one", func(c *lease.Config) { c.RetryJitter = 1 }, []string{"RetryJitter is 1, must be in [0, 1)"}},
		{"jitter NaN", func(c *lease.Config) { c.RetryJitter = math.NaN() }, []string{"RetryJitter is NaN"}},
		{"several at once", func(c *lease.Config) { c.LeaseDuration = 0; c.RetryJitter = 2 }, []string{"LeaseDuration", "RetryJitter"}},
		{"lease at the bound", func(c *lease.Config) { c.LeaseDuration = lease.MaxDuration }, nil},
		{"lease past the bound", func(c *lease.Config) { c.LeaseDuration = lease.MaxDuration + 1 }, []string{"LeaseDuration is 168h0m0.000000001s, must be at most 168h0m0s"}},
		{"lease max int64", func(c *lease.Config) { c.LeaseDuration = math.MaxInt64 }, []string{"LeaseDuration", "must be at most"}},
		{"error interval max int64", func(c *lease.Config) { c.ErrorInterval = math.MaxInt64 }, []string{"ErrorInterval", "must be at most"}},
		{"every duration at the bound", func(c *lease.Config) {
			*c = lease.Config{LeaseDuration: lease.MaxDuration, RenewDeadline: lease.MaxDuration - 2, RetryInterval: lease.MaxDuration - 4,
				RetryJitter: 0, BackendTimeout: lease.MaxDuration - 3, ErrorInterval: lease.MaxDuration}
		}, nil},
		{"zero config", func(c *lease.Config) { *c = lease.Config{} }, []string{"LeaseDuration", "RenewDeadline", "RetryInterval", "BackendTimeout", "ErrorInterval"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := lease.DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, lease.ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

// smallestConfig is the Config with the shortest timings Validate accepts:
// every duration at its floor or just above what the rules need.
func smallestConfig() lease.Config {
	return lease.Config{
		LeaseDuration:  lease.MinDuration + 2,
		RenewDeadline:  lease.MinDuration + 1,
		RetryInterval:  lease.MinDuration,
		RetryJitter:    0,
		BackendTimeout: lease.MinDuration,
		ErrorInterval:  lease.MinErrorInterval,
	}
}

func TestEnvPrefix(t *testing.T) {
	for name, want := range map[string]string{
		"billing-cron": "TENURE_BILLING_CRON_",
		"a.b/c d":      "TENURE_A_B_C_D_",
		"Émile9":       "TENURE__MILE9_",
	} {
		if got := lease.EnvPrefix(name); got != want {
			t.Errorf("EnvPrefix(%q) = %q, want %q", name, got, want)
		}
	}
}

func env(m map[string]string) lease.LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadPrecedence(t *testing.T) {
	base := lease.DefaultConfig()
	base.RetryInterval = 3 * time.Second // what an explicit caller set
	s, err := lease.Load("billing-cron", base, env(map[string]string{
		"TENURE_LEASE_DURATION":              "20s",
		"TENURE_BILLING_CRON_LEASE_DURATION": "30s",
		"TENURE_RENEW_DEADLINE":              "12s",
		"TENURE_BILLING_CRON_RETRY_JITTER":   "0.25",
		"TENURE_BACKEND_TIMEOUT":             "1500ms",
		"TENURE_ERROR_INTERVAL":              "1m",
		"TENURE_IDENTITY":                    "shared-id",
		"TENURE_BILLING_CRON_IDENTITY":       "pod-7",
		"TENURE_OTHER_LEASE_DURATION":        "99s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := lease.Config{
		LeaseDuration: 30 * time.Second, RenewDeadline: 12 * time.Second, RetryInterval: 3 * time.Second,
		RetryJitter: 0.25, BackendTimeout: 1500 * time.Millisecond, ErrorInterval: time.Minute,
	}
	if s.Config != want {
		t.Errorf("Config = %+v, want %+v", s.Config, want)
	}
	if s.Identity != "pod-7" {
		t.Errorf("Identity = %q, want pod-7", s.Identity)
	}
}

func TestLoadNilLookupKeepsBase(t *testing.T) {
	s, err := lease.Load("x", lease.DefaultConfig(), nil)
	if err != nil || s.Config != lease.DefaultConfig() || s.Identity != "" {
		t.Fatalf("Load with nil lookup = %+v, %v", s, err)
	}
}

func TestLoadBadValuesNameTheVariable(t *testing.T) {
	_, err := lease.Load("job", lease.DefaultConfig(), env(map[string]string{
		"TENURE_JOB_LEASE_DURATION": "15",
		"TENURE_RETRY_JITTER":       "ten percent",
	}))
	if !errors.Is(err, lease.ErrInvalidEnv) {
		t.Fatalf("Load = %v, want ErrInvalidEnv", err)
	}
	for _, w := range []string{`TENURE_JOB_LEASE_DURATION="15"`, `TENURE_RETRY_JITTER="ten percent"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
}

// A variable set to nothing, or to spaces, counts as unset: the shared
// variable or the base applies, and nothing fails to parse.
func TestLoadEmptyVariablesAreUnset(t *testing.T) {
	base := lease.DefaultConfig()
	s, err := lease.Load("job", base, env(map[string]string{
		"TENURE_JOB_LEASE_DURATION":   "",
		"TENURE_LEASE_DURATION":       "20s",
		"TENURE_JOB_RENEW_DEADLINE":   "   ",
		"TENURE_RETRY_INTERVAL":       "\t",
		"TENURE_JOB_RETRY_JITTER":     "",
		"TENURE_BACKEND_TIMEOUT":      " 1s ",
		"TENURE_JOB_ERROR_INTERVAL":   " ",
		"TENURE_ERROR_INTERVAL":       "",
		"TENURE_JOB_IDENTITY":         " ",
		"TENURE_IDENTITY":             " pod-3 ",
		"TENURE_OTHER_RETRY_JITTER":   "",
		"TENURE_OTHER_LEASE_DURATION": "x",
	}))
	if err != nil {
		t.Fatalf("Load = %v, want empty variables skipped", err)
	}
	want := base
	want.LeaseDuration, want.BackendTimeout = 20*time.Second, time.Second
	if s.Config != want {
		t.Errorf("Config = %+v, want %+v", s.Config, want)
	}
	if s.Identity != "pod-3" {
		t.Errorf("Identity = %q, want pod-3 (an empty per-name identity counts as unset)", s.Identity)
	}
	if id := lease.LoadIdentity("job", env(map[string]string{"TENURE_IDENTITY": "  "})); id != "" {
		t.Errorf("LoadIdentity of a blank variable = %q, want \"\"", id)
	}
}

// LoadIdentity reads the identity variables and nothing else.
func TestLoadIdentityReadsOnlyIdentity(t *testing.T) {
	var read []string
	lookup := func(k string) (string, bool) {
		read = append(read, k)
		if k == "TENURE_BILLING_CRON_IDENTITY" {
			return "pod-7", true
		}
		return "garbage", true
	}
	if id := lease.LoadIdentity("billing-cron", lookup); id != "pod-7" {
		t.Fatalf("LoadIdentity = %q, want pod-7", id)
	}
	for _, k := range read {
		if !strings.HasSuffix(k, "_IDENTITY") {
			t.Errorf("LoadIdentity read %s", k)
		}
	}
	if id := lease.LoadIdentity("x", nil); id != "" {
		t.Errorf("LoadIdentity with a nil lookup = %q", id)
	}
}

// Settings.Validate names the variable that set each field it refuses,
// with its value and the rule, for a shared and a per-name variable;
// a field nothing set is named alone.
func TestSettingsValidateNamesTheVariables(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want []string
	}{
		{"shared", map[string]string{"TENURE_LEASE_DURATION": "-5s"},
			[]string{"LeaseDuration is -5s (from TENURE_LEASE_DURATION=-5s), must be at least 1ms (lease.MinDuration)"}},
		{"per name", map[string]string{"TENURE_LEASE_DURATION": "20s", "TENURE_JOB_LEASE_DURATION": "5s"},
			[]string{"RenewDeadline (10s) must be < LeaseDuration (5s, from TENURE_JOB_LEASE_DURATION=5s)"}},
		{"both sides", map[string]string{"TENURE_JOB_RENEW_DEADLINE": "4s", "TENURE_RETRY_INTERVAL": "4s"},
			[]string{"RetryInterval*(1+RetryJitter) (4.4s, from TENURE_RETRY_INTERVAL=4s) must be < RenewDeadline (4s, from TENURE_JOB_RENEW_DEADLINE=4s)",
				"BackendTimeout (5s) must be < RenewDeadline (4s, from TENURE_JOB_RENEW_DEADLINE=4s)"}},
		{"jitter", map[string]string{"TENURE_JOB_RETRY_JITTER": "1.5"},
			[]string{"RetryJitter is 1.5 (from TENURE_JOB_RETRY_JITTER=1.5), must be in [0, 1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := lease.Load("job", lease.DefaultConfig(), env(tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Validate()
			if !errors.Is(err, lease.ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("Validate = %q, want %d errors", err, len(tc.want))
			}
			for i, w := range tc.want {
				if lines[i] != "lease: invalid config: "+w {
					t.Errorf("error %d is %q, want %q", i, lines[i], w)
				}
			}
			if s.Config.Validate() == nil {
				t.Error("Config.Validate accepts what Settings.Validate refuses")
			}
		})
	}
}

// UnknownEnv names the TENURE_ variables no part of Tenure reads, and
// none of the per-name variables of any election.
func TestUnknownEnv(t *testing.T) {
	environ := []string{
		"PATH=/bin",
		"TENURE_LEASE_DURATIN=15s",          // misspelt shared variable
		"TENURE_JOB_LEASE_DURATIN=15s",      // misspelt per-name variable
		"TENURE_LEASE_DURATION=15s",         // shared
		"TENURE_OTHER_JOB_RETRY_JITTER=0.2", // another election's
		"TENURE_JOB_IDENTITY=pod-1",
		"TENURE_STORE=redis://localhost",
		"TENURE_TOKEN=7",
		"TENURE_SIM_SEEDS=1-10",
		"TENURE_IDENTIY=pod-1",      // misspelt
		"TENURE__LEASE_DURATION=1s", // no name: no election has this prefix
		"TENURE_LEASE_DURATIN=20s",  // named once
		"TENURE_=x",
		"tenure_lease_duration=1s", // not Tenure's: variables are upper case
	}
	want := []string{"TENURE_", "TENURE_IDENTIY", "TENURE_JOB_LEASE_DURATIN", "TENURE_LEASE_DURATIN", "TENURE__LEASE_DURATION"}
	if got := lease.UnknownEnv(environ); !slices.Equal(got, want) {
		t.Errorf("UnknownEnv = %q, want %q", got, want)
	}
	if got := lease.UnknownEnv(nil); got != nil {
		t.Errorf("UnknownEnv(nil) = %q", got)
	}
}

// SuggestEnv proposes the variable a misspelt one was meant to be, keeping
// the election's name of a per-name variable, and nothing for a variable
// too far from every one Tenure reads.
func TestSuggestEnv(t *testing.T) {
	for _, tt := range []struct{ key, want string }{
		{"TENURE_LEASE_DURATIN", "TENURE_LEASE_DURATION"},
		{"TENURE_LEASE_DURATOIN", "TENURE_LEASE_DURATION"}, // two letters swapped
		{"TENURE_LEASEDURATION", "TENURE_LEASE_DURATION"},
		{"TENURE__LEASE_DURATION", "TENURE_LEASE_DURATION"},
		{"TENURE_JOB_LEASE_DURATIN", "TENURE_JOB_LEASE_DURATION"},
		{"TENURE_BILLING_CRON_RENEW_DEADLNE", "TENURE_BILLING_CRON_RENEW_DEADLINE"},
		{"TENURE_IDENTIY", "TENURE_IDENTITY"},
		{"TENURE_POD_IDENTIY", "TENURE_POD_IDENTITY"},
		{"TENURE_RETRY_JITER", "TENURE_RETRY_JITTER"},
		{"TENURE_BACKEND_TIMEOUTS", "TENURE_BACKEND_TIMEOUT"},
		{"TENURE_ERROR_INTERVALL", "TENURE_ERROR_INTERVAL"},
		{"TENURE_STOR", "TENURE_STORE"},
		{"TENURE_SIM_SEED", "TENURE_SIM_SEEDS"},
		{"TENURE_LEASE", ""},          // too far from LEASE_DURATION
		{"TENURE_DURATION", ""},       // too far too
		{"TENURE_ID", ""},             // a third of IDENTITY's letters at most
		{"TENURE_", ""},               // nothing to go on
		{"TENURE_FOO", ""},            // nothing close
		{"TENURE_LEASE_DURATION", ""}, // read: nothing to suggest
		{"TENURE_JOB_IDENTITY", ""},
		{"TENURE_STORE", ""},
		{"LEASE_DURATIN", ""}, // not Tenure's
		{"tenure_lease_duratin", ""},
		{"TENURE_" + strings.Repeat("A_", 5000) + "LEASE_DURATIN", "TENURE_" + strings.Repeat("A_", 5000) + "LEASE_DURATION"},
	} {
		if got := lease.SuggestEnv(tt.key); got != tt.want {
			t.Errorf("SuggestEnv(%.40q) = %.40q, want %.40q", tt.key, got, tt.want)
		}
	}
}
