//go:build !race

package exhaust

// raceOn says that the tests run with the race detector.
const raceOn = false
