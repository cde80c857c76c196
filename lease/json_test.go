package lease_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/tenure-go/tenure/lease"
)

func TestConfigJSONRoundTrip(t *testing.T) {
	configs := []lease.Config{
		lease.DefaultConfig(),
		{LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryInterval: 100 * time.Millisecond, RetryJitter: 0, BackendTimeout: 500 * time.Millisecond, ErrorInterval: time.Minute},
		{LeaseDuration: lease.MaxDuration, RenewDeadline: lease.MaxDuration - 2, RetryInterval: lease.MaxDuration - 4, BackendTimeout: lease.MaxDuration - 3, ErrorInterval: lease.MaxDuration},
		smallestConfig(),
	}
	for _, c := range configs {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", c, err)
		}
		var got lease.Config
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if got != c {
			t.Fatalf("round trip of %+v through %s gave %+v", c, b, got)
		}
		y, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("yaml.Marshal(%+v): %v", c, err)
		}
		got = lease.Config{}
		if err := yaml.UnmarshalStrict(y, &got); err != nil || got != c {
			t.Fatalf("YAML round trip of %+v through %q gave %+v, %v", c, y, got, err)
		}
	}
	b, _ := json.Marshal(lease.DefaultConfig())
	const want = `{"lease_duration":"15s","renew_deadline":"10s","retry_interval":"2s","retry_jitter":0.1,"backend_timeout":"5s","error_interval":"30s"}`
	if string(b) != want {
		t.Fatalf("Marshal(DefaultConfig()) = %s, want %s", b, want)
	}
}

func TestConfigJSONRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error
	}{
		{"unknown key", `{"lease_duration":"20s","leaseDuration":"20s"}`, []string{`unknown field "leaseDuration"`}},
		{"key in another case", `{"Lease_Duration":"30s"}`, []string{`unknown field "Lease_Duration"`}},
		{"key in upper case", `{"LEASE_DURATION":"30s","Retry_Jitter":0.2}`, []string{`unknown field "LEASE_DURATION"`, `unknown field "Retry_Jitter"`}},
		{"key in another case beside the exact one", `{"lease_duration":"20s","lease_Duration":"30s"}`, []string{`unknown field "lease_Duration"`}},
		{"number as duration", `{"lease_duration":15}`, []string{"lease_duration is a JSON number", `"15s"`}},
		{"string as jitter", `{"retry_jitter":"0.1"}`, []string{"retry_jitter is a JSON string", "0.1"}},
		{"jitter beyond a float64", `{"retry_jitter":1e400}`, []string{"retry_jitter is a JSON number 1e400, must be a number in [0, 1), such as 0.1"}},
		{"bad duration", `{"renew_deadline":"10 seconds"}`, []string{`renew_deadline is "10 seconds", not a duration`}},
		{"overflowing duration", `{"error_interval":"9999999999h"}`, []string{"error_interval", "not a duration"}},
		{"two bad durations", `{"renew_deadline":"x","retry_interval":"y"}`, []string{"renew_deadline", "retry_interval"}},
		{"validated", `{"renew_deadline":"20s"}`, []string{"RenewDeadline (20s, from key renew_deadline) must be < LeaseDuration (15s)"}},
		{"negative", `{"backend_timeout":"-1s"}`, []string{"BackendTimeout is -1s (from key backend_timeout), must be at least 1ms"}},
		{"past the bound", `{"lease_duration":"169h"}`, []string{"LeaseDuration is 169h0m0s (from key lease_duration), must be at most"}},
		{"jitter one", `{"retry_jitter":1}`, []string{"RetryJitter is 1 (from key retry_jitter), must be in [0, 1)"}},
		{"not an object", `["15s"]`, []string{"invalid config"}},
		{"not JSON", `lease_duration: 15s`, []string{"invalid config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := lease.DefaultConfig()
			err := c.UnmarshalJSON([]byte(tt.in))
			if !errors.Is(err, lease.ErrInvalidConfig) {
				t.Fatalf("UnmarshalJSON(%s) = %v, want an error wrapping ErrInvalidConfig", tt.in, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if c != lease.DefaultConfig() {
				t.Errorf("a refused input changed the Config to %+v", c)
			}
			// The same through json.Unmarshal, as a program calls it.
			c2 := lease.DefaultConfig()
			if err := json.Unmarshal([]byte(tt.in), &c2); err == nil {
				t.Errorf("json.Unmarshal(%s) accepted it", tt.in)
			}
		})
	}
	var nilCfg *lease.Config
	if err := nilCfg.UnmarshalJSON([]byte(`{}`)); !errors.Is(err, lease.ErrInvalidConfig) {
		t.Errorf("UnmarshalJSON on a nil *Config = %v", err)
	}
	c := lease.DefaultConfig()
	if err := c.UnmarshalJSON([]byte(`{} {}`)); !errors.Is(err, lease.ErrInvalidConfig) {
		t.Errorf("UnmarshalJSON of two objects = %v", err)
	}
	for _, j := range []float64{math.NaN(), math.Inf(1)} {
		c.RetryJitter = j
		if _, err := json.Marshal(c); err == nil {
			t.Errorf("Marshal with RetryJitter %v succeeded", j)
		}
	}
}

func TestConfigJSONKeepsAbsentKeys(t *testing.T) {
	c := lease.DefaultConfig()
	if err := json.Unmarshal([]byte(`{"lease_duration":"30s","renew_deadline":"20s","retry_jitter":null}`), &c); err != nil {
		t.Fatal(err)
	}
	want := lease.DefaultConfig()
	want.LeaseDuration, want.RenewDeadline = 30*time.Second, 20*time.Second
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	// Decoding into the zero Config needs every duration.
	var zero lease.Config
	if err := json.Unmarshal([]byte(`{"lease_duration":"30s"}`), &zero); !errors.Is(err, lease.ErrInvalidConfig) {
		t.Fatalf("a partial config over the zero Config = %v, want invalid", err)
	}
}

// TestConfigYAMLFile loads a Config from a YAML file with sigs.k8s.io/yaml,
// which converts YAML to JSON and decodes with Config.UnmarshalJSON: the
// unknown key and the validation are refused the same way.
func TestConfigYAMLFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "election.yaml")
	if err := os.WriteFile(good, []byte("# billing election\nlease_duration: 30s\nrenew_deadline: 20s\nretry_jitter: 0.2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	c := lease.DefaultConfig()
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	want := lease.DefaultConfig()
	want.LeaseDuration, want.RenewDeadline, want.RetryJitter = 30*time.Second, 20*time.Second, 0.2
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	for _, bad := range []string{"lease_duraton: 30s\n", "renew_deadline: 20s\n", "lease_duration: 15\n"} {
		c := lease.DefaultConfig()
		if err := yaml.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("yaml.Unmarshal(%q) accepted it: %+v", bad, c)
		}
	}
}

// Any valid Config survives a round trip through JSON exactly; any Config
// at all either decodes to itself or is refused, never changed.
func TestConfigJSONRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := func(label string) time.Duration {
			return time.Duration(rapid.Int64Range(-1, int64(lease.MaxDuration)+1).Draw(t, label))
		}
		c := lease.Config{
			LeaseDuration: d("lease"), RenewDeadline: d("renew"), RetryInterval: d("retry"),
			RetryJitter:    rapid.Float64Range(-0.1, 1.1).Draw(t, "jitter"),
			BackendTimeout: d("backend"), ErrorInterval: d("errors"),
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", c, err)
		}
		got := lease.DefaultConfig()
		err = json.Unmarshal(b, &got)
		switch valid := c.Validate() == nil; {
		case valid && (err != nil || got != c):
			t.Fatalf("valid %+v through %s gave %+v, %v", c, b, got, err)
		case !valid && err == nil:
			t.Fatalf("invalid %+v through %s was accepted as %+v", c, b, got)
		case !valid && got != lease.DefaultConfig():
			t.Fatalf("a refused decode changed the Config to %+v", got)
		}
	})
}

// Valid Configs, drawn as such, round trip exactly.
func TestConfigJSONValidRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		longest := int64(lease.MaxDuration)
		shortest := int64(lease.MinDuration)
		ld := rapid.Int64Range(shortest+2, longest).Draw(t, "lease")
		rd := rapid.Int64Range(shortest+1, ld-1).Draw(t, "renew")
		jitter := rapid.Float64Range(0, 0.5).Draw(t, "jitter")
		retryMax := int64(float64(rd-1)/(1+jitter)) - 1
		if retryMax < shortest {
			jitter, retryMax = 0, rd-1
		}
		c := lease.Config{
			LeaseDuration:  time.Duration(ld),
			RenewDeadline:  time.Duration(rd),
			RetryJitter:    jitter,
			RetryInterval:  time.Duration(rapid.Int64Range(shortest, retryMax).Draw(t, "retry")),
			BackendTimeout: time.Duration(rapid.Int64Range(shortest, rd-1).Draw(t, "backend")),
			ErrorInterval:  time.Duration(rapid.Int64Range(int64(lease.MinErrorInterval), longest).Draw(t, "errors")),
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("the generator drew an invalid %+v: %v", c, err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var got lease.Config
		if err := json.Unmarshal(b, &got); err != nil || got != c {
			t.Fatalf("%+v through %s gave %+v, %v", c, b, got, err)
		}
	})
}

// ReadFile names the file and the key of every value it refuses, with the
// value and the rule; an absent key keeps the base's value.
func TestReadFileNamesTheFileAndKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"lease_duration":"30s","renew_deadline":"20s"}`)
	c, err := lease.ReadFile(good, lease.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaseDuration != 30*time.Second || c.RenewDeadline != 20*time.Second || c.RetryInterval != lease.DefaultConfig().RetryInterval {
		t.Errorf("ReadFile = %+v, want the file's two keys over the defaults", c)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"negative", `{"lease_duration":"-5s"}`, "LeaseDuration is -5s (from key lease_duration in FILE), must be at least 1ms (lease.MinDuration)"},
		{"relation", `{"renew_deadline":"20s"}`, "RenewDeadline (20s, from key renew_deadline in FILE) must be < LeaseDuration (15s)"},
		{"not a duration", `{"retry_interval":"2"}`, `retry_interval in FILE is "2", not a duration`},
		{"unknown key", `{"lease_duratin":"2s"}`, `unknown field "lease_duratin" in FILE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name+".json", tc.body)
			c, err := lease.ReadFile(p, lease.DefaultConfig())
			if !errors.Is(err, lease.ErrInvalidConfig) {
				t.Fatalf("ReadFile = %v, want ErrInvalidConfig", err)
			}
			if want := strings.ReplaceAll(tc.want, "FILE", p); !strings.Contains(err.Error(), want) {
				t.Errorf("ReadFile = %q, want %q", err, want)
			}
			if c != lease.DefaultConfig() {
				t.Errorf("ReadFile returned %+v with its error, want the base", c)
			}
		})
	}
	if _, err := lease.ReadFile(filepath.Join(dir, "missing.json"), lease.DefaultConfig()); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("ReadFile of a missing file = %v, want an error naming it", err)
	}
}

// A value of the wrong JSON type is refused with the value itself, not
// only its type: the reader sees what the file said (90, meant as 90s;
// "0.25", a jitter quoted), through UnmarshalJSON and through ReadFile.
func TestConfigJSONWrongTypeNamesTheValueGiven(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"number as duration", `{"lease_duration":90}`, "lease_duration FILE is a JSON number 90, must be a string duration"},
		{"fraction as duration", `{"renew_deadline":2.5}`, "renew_deadline FILE is a JSON number 2.5, must be a string duration"},
		{"bool as duration", `{"retry_interval":true}`, "retry_interval FILE is a JSON bool true, must be a string duration"},
		{"object as duration", `{"backend_timeout":{"seconds": 5}}`, `backend_timeout FILE is a JSON object {"seconds":5}, must be a string duration`},
		{"string as jitter", `{"retry_jitter":"0.25"}`, `retry_jitter FILE is a JSON string "0.25", must be a number in [0, 1)`},
		{"number beyond a float64", `{"retry_jitter":1e400}`, "retry_jitter FILE is a JSON number 1e400, must be a number in [0, 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := lease.DefaultConfig()
			err := c.UnmarshalJSON([]byte(tc.body))
			if want := strings.ReplaceAll(tc.want, " FILE", ""); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("UnmarshalJSON(%s) = %v, want %q", tc.body, err, want)
			}
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = lease.ReadFile(p, lease.DefaultConfig())
			if want := strings.ReplaceAll(tc.want, "FILE", "in "+p); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadFile = %v, want %q", err, want)
			}
		})
	}
}

// A key given twice, once with a value of the wrong type and once
// rightly, is refused for the value that was wrong, not shown with the
// other one: "a JSON number \"5s\"" names neither what was refused nor
// its type.
func TestConfigJSONWrongTypeOfADuplicateKeyNamesTheValueRefused(t *testing.T) {
	c := lease.DefaultConfig()
	err := c.UnmarshalJSON([]byte(`{"lease_duration": 90, "lease_duration": "5s"}`))
	if err == nil || strings.Contains(err.Error(), `"5s"`) || !strings.Contains(err.Error(), "is a JSON number") {
		t.Fatalf("UnmarshalJSON = %v; want the number refused, not shown as \"5s\"", err)
	}
}
