package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestPlanPrintsTimingsEnvAndGuarantees(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"plan", "--store-outage", "30s", "--clock-drift", "0.05", "--failover", "60s", "--elections", "1000"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"--lease-duration 47.458s --renew-deadline 39.375s --retry-interval 3.579s --backend-timeout 3.936s",
		"TENURE_LEASE_DURATION=47.458s\n", "TENURE_RENEW_DEADLINE=39.375s\n", "TENURE_RETRY_INTERVAL=3.579s\n",
		"TENURE_RETRY_JITTER=0.1\n", "TENURE_BACKEND_TIMEOUT=3.936s\n", "TENURE_ERROR_INTERVAL=30s\n",
		"crash failover    ≤ 55.985s", "graceful handover ≤ 1ms", "store outage      ≥ 30.001s survived", "store writes      ≤ 16764 a minute (renewals of 1000 elections)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPlanNamesTheRequirementItCannotMeet(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--store-outage", "30s", "--clock-drift", "0.05", "--failover", "40s"}, 1, "--failover 40s cannot be met with --store-outage 30s, --clock-drift 0.05 and --latency 0s"},
		{[]string{"--store-outage", "30s", "--clock-drift", "NaN", "--failover", "60s"}, 1, "--clock-drift is NaN, must be in [0, 1)"},
		{[]string{"--failover", "60s"}, 1, "--store-outage is 0s, must be above 0"},
		{[]string{"--store-outage", "30s", "--failover", "60s", "--elections", "-1"}, 1, "--elections is -1, must be at least 0"},
		{[]string{"--store-outage", "30s", "--failover", "60s", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--store-outage", "soon"}, 2, "invalid value"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"plan"}, tc.args...), &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("tenure plan %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}
