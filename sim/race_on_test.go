//go:build race

package sim

// raceOn says that the tests run with the race detector, which slows the
// simulator tenfold: the adversary's sweeps run fewer seeds.
const raceOn = true
