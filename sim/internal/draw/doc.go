// Package draw holds the random draws that the simulator's model mode
// (package sim) and runtime mode (sim/internal/rt) share, so that both
// draw their faults' parameters under the same rules.
package draw
