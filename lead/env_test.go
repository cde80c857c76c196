package lead_test

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// With WithConfig no timing variable is read, not even one that cannot be
// parsed; the identity variables still are.
func TestWithConfigReadsNoTimingVariable(t *testing.T) {
	vars := map[string]string{
		"TENURE_JOB_ERROR_INTERVAL": "soon",
		"TENURE_LEASE_DURATION":     "1s",
		"TENURE_RETRY_JITTER":       "lots",
		"TENURE_JOB_IDENTITY":       "pod-9",
	}
	var read []string
	lookup := lead.WithLookupEnv(func(k string) (string, bool) {
		read = append(read, k)
		v, ok := vars[k]
		return v, ok
	})
	e, err := lead.New("job", memstore.New[meta](), lookup, lead.WithConfig(fastConfig()))
	if err != nil {
		t.Fatalf("New with WithConfig = %v; want the timing variables ignored", err)
	}
	if e.Config() != fastConfig() {
		t.Errorf("Config = %+v, want the one given", e.Config())
	}
	if e.Identity() != "pod-9" {
		t.Errorf("Identity = %q, want pod-9 from TENURE_JOB_IDENTITY", e.Identity())
	}
	for _, k := range read {
		if !strings.HasSuffix(k, "_IDENTITY") {
			t.Errorf("New with WithConfig read %s", k)
		}
	}
	// Without WithConfig the same bad variable fails New, naming it.
	if _, err := lead.New("job", memstore.New[meta](), lookup); err == nil || !strings.Contains(err.Error(), "TENURE_JOB_ERROR_INTERVAL") {
		t.Fatalf("New without WithConfig = %v, want an error naming TENURE_JOB_ERROR_INTERVAL", err)
	}
}

// A blank variable counts as unset for New too.
func TestBlankVariablesAreUnset(t *testing.T) {
	vars := map[string]string{"TENURE_JOB_LEASE_DURATION": "", "TENURE_JOB_IDENTITY": "  ", "TENURE_IDENTITY": "pod-2"}
	e, err := lead.New("job", memstore.New[meta](), lead.WithLookupEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok }))
	if err != nil {
		t.Fatal(err)
	}
	if e.Identity() != "pod-2" {
		t.Errorf("Identity = %q, want pod-2", e.Identity())
	}
}

// WithIdentity("") is an error naming the option and the rule, and saying
// how to get the default; without WithIdentity the default applies.
func TestEmptyIdentityIsAnError(t *testing.T) {
	podName := "" // as os.Getenv("POD_NAME") returns when it is not set
	_, err := lead.New("job", memstore.New[meta](), lead.WithIdentity(podName), lead.WithLookupEnv(nil))
	if !errors.Is(err, lead.ErrInvalidOption) || !errors.Is(err, lead.ErrInvalidIdentity) {
		t.Fatalf("New with WithIdentity(\"\") = %v, want an error wrapping ErrInvalidOption and ErrInvalidIdentity", err)
	}
	for _, want := range []string{"WithIdentity", "must not be empty", "hostname plus a random suffix"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := lead.NewGroup(memstore.New[meta](), lead.WithIdentity("")); !errors.Is(err, lead.ErrInvalidIdentity) {
		t.Errorf("NewGroup with WithIdentity(\"\") = %v, want ErrInvalidIdentity", err)
	}
	e, err := lead.New("job", memstore.New[meta](), lead.WithLookupEnv(nil))
	if err != nil || e.Identity() == "" {
		t.Fatalf("New without WithIdentity = %v, identity %q; want the default", err, e.Identity())
	}
}

// New's error for a timing a variable set names the variable, its value
// and the rule.
func TestNewNamesTheVariableOfABadTiming(t *testing.T) {
	vars := map[string]string{"TENURE_LEASE_DURATION": "-5s"}
	_, err := lead.New("job", memstore.New[meta](), lead.WithLookupEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok }))
	if !errors.Is(err, lease.ErrInvalidConfig) {
		t.Fatalf("New = %v, want ErrInvalidConfig", err)
	}
	if want := "LeaseDuration is -5s (from TENURE_LEASE_DURATION=-5s), must be at least 1ms"; !strings.Contains(err.Error(), want) {
		t.Errorf("New = %q, want it to say %q", err, want)
	}
}

// New warns about each TENURE_ variable no part of Tenure reads, naming
// it, and not about the per-name variables of other elections.
func TestNewWarnsAboutUnknownTenureVariables(t *testing.T) {
	environ := []string{
		"HOME=/root",
		"TENURE_LEASE_DURATIN=20s",
		"TENURE_JOB_RENEW_DEADLIN=5s",
		"TENURE_OTHER_LEASE_DURATION=30s",
		"TENURE_LEASE_DURATION=20s",
	}
	vars := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	logs := newAttrLog()
	_, err := lead.New("job", memstore.New[meta](), lead.WithLogger(slog.New(logs)),
		lead.WithLookupEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok }),
		lead.WithEnviron(func() []string { return environ }))
	if err != nil {
		t.Fatal(err)
	}
	var warned, suggested []string
	for _, r := range logs.all() {
		if r.level == slog.LevelWarn && strings.Contains(r.msg, "Tenure does not read") {
			warned = append(warned, r.attrs["variable"])
			suggested = append(suggested, r.attrs["did_you_mean"])
		}
	}
	if want := []string{"TENURE_JOB_RENEW_DEADLIN", "TENURE_LEASE_DURATIN"}; !slices.Equal(warned, want) {
		t.Errorf("warned about %q, want %q", warned, want)
	}
	if want := []string{"TENURE_JOB_RENEW_DEADLINE", "TENURE_LEASE_DURATION"}; !slices.Equal(suggested, want) {
		t.Errorf("suggested %q, want %q", suggested, want)
	}
	// WithLookupEnv alone lists nothing: no warning about the process's
	// environment.
	logs = newAttrLog()
	if _, err := lead.New("job", memstore.New[meta](), lead.WithLogger(slog.New(logs)), lead.WithLookupEnv(nil)); err != nil {
		t.Fatal(err)
	}
	for _, r := range logs.all() {
		if strings.Contains(r.msg, "Tenure does not read") {
			t.Errorf("warned %v with WithLookupEnv and no WithEnviron", r.attrs)
		}
	}
}

// New's error for an identity it refuses names where the identity came
// from (the variable, or WithIdentity), the value given and the rule,
// whichever rule it breaks.
func TestNewNamesTheSourceOfABadIdentity(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name string
		vars map[string]string
		opts []lead.Option
		want []string
	}{
		{"per-name variable too long", map[string]string{"TENURE_JOB_IDENTITY": long}, nil,
			[]string{"TENURE_JOB_IDENTITY", long, "300 bytes, the limit is 253"}},
		{"shared variable too long", map[string]string{"TENURE_IDENTITY": " " + long + " "}, nil,
			[]string{"TENURE_IDENTITY", long, "300 bytes"}},
		{"shared variable with a control character", map[string]string{"TENURE_JOB_IDENTITY": " ", "TENURE_IDENTITY": "pod\x01"}, nil,
			[]string{"TENURE_IDENTITY", `"pod\x01"`, "control character"}},
		{"WithIdentity too long", map[string]string{"TENURE_JOB_IDENTITY": "pod-1"}, []lead.Option{lead.WithIdentity(long)},
			[]string{"WithIdentity", long, "300 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]lead.Option{lead.WithLookupEnv(func(k string) (string, bool) { v, ok := tc.vars[k]; return v, ok })}, tc.opts...)
			_, err := lead.New("job", memstore.New[meta](), opts...)
			if !errors.Is(err, lead.ErrInvalidIdentity) {
				t.Fatalf("New = %v, want ErrInvalidIdentity", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
