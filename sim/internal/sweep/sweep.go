package sweep

import (
	"fmt"
	"iter"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Environment variables that steer a sweep from outside a test, so that a
// failing seed can be replayed without editing the test.
const (
	EnvSeeds  = "TENURE_SIM_SEEDS"
	EnvBudget = "TENURE_SIM_BUDGET"
	EnvSVG    = "TENURE_SIM_SVG"
	EnvTrace  = "TENURE_SIM_TRACE"
)

// Env returns the value of an environment variable, trimmed, and whether
// it is set to something.
func Env(key string) (string, bool) {
	v, ok := os.LookupEnv(key)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// Budget returns the budget from the environment if set, else def.
func Budget(def time.Duration) (time.Duration, error) {
	v, ok := Env(EnvBudget)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration", EnvBudget, v)
	}
	return d, nil
}

// Run calls fn for each seed of seeds on workers goroutines (GOMAXPROCS
// when zero). When deadline is not zero, no seed starts after it. It
// returns how many seeds ran.
func Run(seeds iter.Seq[uint64], workers int, deadline time.Time, fn func(seed uint64)) int {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next, stop := iter.Pull(seeds)
	defer stop()
	var (
		mu  sync.Mutex
		ran int
		wg  sync.WaitGroup
	)
	take := func() (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return 0, false
		}
		seed, ok := next()
		if ok {
			ran++
		}
		return seed, ok
	}
	for range workers {
		wg.Go(func() {
			for {
				seed, ok := take()
				if !ok {
					return
				}
				fn(seed)
			}
		})
	}
	wg.Wait()
	return ran
}

// Naturals yields 1, 2, 3, ... without end.
func Naturals(yield func(uint64) bool) {
	for s := uint64(1); s != 0; s++ {
		if !yield(s) {
			return
		}
	}
}

// RunPattern returns a -run pattern that selects exactly the test named
// name (a subtest's name holds slashes).
func RunPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + quoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// quoteMeta escapes what a -run pattern would read as a regular
// expression.
func quoteMeta(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
