// Command tenure is Tenure's command line. Its subcommands:
//
//	tenure demo    several workers in one process on the in-memory store,
//	               leaders handing over, printed as it happens
//	tenure get     print an election's lease record
//	tenure watch   print a line per change of a lease record
//	tenure ui      serve a live web page of the elections under a prefix,
//	               with each name's recent handovers
//	tenure run     run a command only while this process leads
//	tenure plan    derive timings from the store outage, clock drift and
//	               crash failover you can tolerate (lease.Plan), printed
//	               as tenure run's flags and TENURE_* variables
//	tenure sim     the election simulator: model mode (the state machine
//	               in virtual time, byte-reproducible from a seed) or, with
//	               -runtime, the real lead.Electors on memstore in real
//	               time on a scaled clock (-speed; not byte-reproducible:
//	               go test with sim/simtest is the reproducible way)
//
// get, watch, ui and run take the store URL from --store or, when it is not
// given, from the TENURE_STORE environment variable.
//
// Run "tenure help" for the list and "tenure CMD -h" for each command's
// flags.
package main
