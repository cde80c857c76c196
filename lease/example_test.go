package lease_test

import (
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
