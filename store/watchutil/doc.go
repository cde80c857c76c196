// Package watchutil is the watch fan-out of Tenure's own stores, for
// custom stores that implement store.Watcher: writers never wait for
// watchers, and a watcher that falls behind skips to the newest state
// instead of receiving old ones, never an older state after a newer one.
//
// Hub is what a store needs. A store that keeps its records itself calls
// Publish with each new state of a name; a store reached over a network
// gives NewHub a Source (connect, stream, reread), and the Hub keeps one
// connection open while something is watched, reconnects with a backoff
// (50 ms doubling to 2 s), reads every watched key again after a
// reconnection, and closes it after the last watcher left (and an optional
// linger). Watch gives each watcher a channel that starts with the state
// its Watcher reads once the key is watched; WatchFunc delivers the same
// by calling a function, with no goroutine per watcher (for a store's
// WatchFunc, see store.FuncWatcher). A Watcher's Next filters the states
// of its key (untrusted input: drop what is not newer) and its Conv
// decodes them as they are delivered. Box and Serve are the parts it is
// made of, for a store that keeps its watchers itself.
package watchutil
