// Package lease defines the lease record that every Tenure store keeps for an
// election name, and the timing configuration that every elector runs with.
//
// A [Record] says who leads, under which fencing token, since when, and what
// typed metadata the leader attached. A [Config] holds the six timings of an
// election; [Config.Validate] checks the inequalities that make "at most one
// leader" hold, [Load] reads overrides from environment variables, and a
// Config reads and writes JSON with durations as strings ("15s"), refusing
// unknown keys and validating what it reads (YAML through a library that
// converts it to JSON, such as sigs.k8s.io/yaml).
//
// The package depends on the standard library only.
package lease
