// Package timeline records what happened in one simulated run (who was in
// which state when, the terms, the faults, the store's changes of holder,
// the verdict of the checks, every swap the store applied or refused) and
// renders it as text or SVG (sim/internal/picture draws it as an HTML
// page). Both modes of
// the simulator use it: package sim (model mode) and package sim/simtest
// (runtime mode).
package timeline
