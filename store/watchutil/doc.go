// Package watchutil is the watch fan-out of Tenure's own stores, for
// custom stores that implement store.Watcher: writers never wait for
// watchers, and a watcher that falls behind skips to the newest state
// instead of receiving old ones, never an older state after a newer one.
//
// Hub is what a store needs: Watch gives each watcher a channel that starts
// with the current state, Publish offers every new state to the watchers of
// a name; WatchFunc delivers the same by calling a function from Publish,
// with no goroutine per watcher (for a store's WatchFunc, see
// store.FuncWatcher). Box and Serve are the parts it is made of, for a
// store that keeps its watchers itself (one per connection, say).
package watchutil
