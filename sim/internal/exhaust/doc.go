// Package exhaust is an exhaustive model check of the real state machine,
// fsm.Machine: no model of the machine, only of its world. Within a bound
// (a Bound: the nodes, a horizon of real time in ticks of 1ms, the
// timings, the store's options and a fault budget) it explores every
// interleaving of the events a driver feeds a machine (ticks, store
// answers, watch events, timeouts, crashes and restarts, clock stops,
// reconfigurations) and of what the network and an adversary do (apply,
// deliver, lose, duplicate or reorder any message in flight; lose, roll
// back, restore or forge the store's record), deduplicating the states it
// reaches by a canonical encoding hashed to 128 bits. At every state it
// feeds the history to a safety judge (the oracle) and stops at the first
// violation, with the shortest schedule that reached it (the search is
// breadth-first).
//
// The machine's state is encoded by reflection over every field of
// fsm.Machine (see machineCodec), so a field added later cannot be
// forgotten. Times are absolute: the horizon is short, and time is part
// of the state anyway.
package exhaust
