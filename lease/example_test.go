package lease_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tenure-go/tenure/lease"
)

func ExampleConfig_Validate() {
	c := lease.DefaultConfig()
	c.RenewDeadline = 20 * time.Second // longer than the lease: unsafe
	fmt.Println(c.Validate())
	// Output:
	// lease: invalid config: RenewDeadline (20s) must be < LeaseDuration (15s)
}

func ExampleLoad() {
	environ := map[string]string{
		"TENURE_LEASE_DURATION":         "30s", // shared by every election
		"TENURE_NIGHTLY_RENEW_DEADLINE": "20s", // only for "nightly"
	}
	lookup := func(k string) (string, bool) { v, ok := environ[k]; return v, ok }

	s, err := lease.Load("nightly", lease.DefaultConfig(), lookup)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Config.LeaseDuration, s.Config.RenewDeadline, s.Config.Validate())
	// Output:
	// 30s 20s <nil>
}

// A Config read from a file. YAML works the same way through
// sigs.k8s.io/yaml, which converts YAML to JSON and so uses
// Config.UnmarshalJSON (see TestConfigYAMLFile).
func ExampleConfig_UnmarshalJSON() {
	file := []byte(`{"lease_duration": "30s", "renew_deadline": "20s"}`)
	c := lease.DefaultConfig() // what the file does not set
	if err := json.Unmarshal(file, &c); err != nil {
		panic(err)
	}
	fmt.Println(c.LeaseDuration, c.RenewDeadline, c.RetryInterval)

	// Unknown keys, numbers for durations and invalid timings are refused.
	fmt.Println(json.Unmarshal([]byte(`{"lease_durration": "30s"}`), &c))
	fmt.Println(json.Unmarshal([]byte(`{"lease_duration": 30}`), &c))
	fmt.Println(json.Unmarshal([]byte(`{"renew_deadline": "1m"}`), &c))

	out, _ := json.Marshal(lease.DefaultConfig())
	fmt.Println(string(out))
	// Output:
	// 30s 20s 2s
	// lease: invalid config: unknown field "lease_durration" (keys are exact, in lower case: lease_duration, renew_deadline, retry_interval, retry_jitter, backend_timeout, error_interval)
	// lease: invalid config: lease_duration is a JSON number 30, must be a string duration such as "15s"
	// lease: invalid config: RenewDeadline (1m0s, from key renew_deadline) must be < LeaseDuration (30s)
	// {"lease_duration":"15s","renew_deadline":"10s","retry_interval":"2s","retry_jitter":0.1,"backend_timeout":"5s","error_interval":"30s"}
}

// Settings.Validate names the variable that set a value it refuses.
func ExampleSettings_Validate() {
	environ := map[string]string{"TENURE_LEASE_DURATION": "-5s"}
	s, err := lease.Load("billing", lease.DefaultConfig(), func(k string) (string, bool) { v, ok := environ[k]; return v, ok })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Validate())
	// Output:
	// lease: invalid config: LeaseDuration is -5s (from TENURE_LEASE_DURATION=-5s), must be at least 1ms (lease.MinDuration)
}

// UnknownEnv finds a misspelt variable, and knows the per-name variables
// of every election.
func ExampleUnknownEnv() {
	fmt.Println(lease.UnknownEnv([]string{
		"TENURE_LEASE_DURATIN=20s",
		"TENURE_BILLING_LEASE_DURATION=30s",
		"TENURE_IDENTITY=pod-1",
		"HOME=/root",
	}))
	// Output:
	// [TENURE_LEASE_DURATIN]
}

// SuggestEnv proposes what a misspelt variable was meant to be.
func ExampleSuggestEnv() {
	for _, key := range lease.UnknownEnv([]string{"TENURE_LEASE_DURATIN=20s", "TENURE_BILLING_IDENTIY=pod-1", "TENURE_COLOR=red"}) {
		if s := lease.SuggestEnv(key); s != "" {
			fmt.Printf("%s: misspelt %s?\n", key, s)
		} else {
			fmt.Printf("%s: not read\n", key)
		}
	}
	// Output:
	// TENURE_BILLING_IDENTIY: misspelt TENURE_BILLING_IDENTITY?
	// TENURE_COLOR: not read
	// TENURE_LEASE_DURATIN: misspelt TENURE_LEASE_DURATION?
}
