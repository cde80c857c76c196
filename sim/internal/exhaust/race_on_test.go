//go:build race

package exhaust

// raceOn says that the tests run with the race detector, which slows the
// search sixfold: the bounds are explored two ticks shorter.
const raceOn = true
