// Package sweep runs many seeds of a simulation on several goroutines,
// for the Check functions of both simulator modes.
package sweep
