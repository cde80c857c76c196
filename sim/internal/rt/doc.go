// Package rt is the core of the simulator's runtime mode: the fault
// schedule, the fault-injecting store wrapper, the drifting clocks, the
// electors' harness and the checks. It imports neither testing nor
// testing/synctest: time passes through a Driver, either a synctest bubble
// (package simtest supplies synctest.Wait and runs in virtual time) or real
// time on a scaled clock (package realtime, which the tenure command uses).
package rt
