// Package latest hands the newest of a stream of values to a slow
// receiver: what the stores' Watch implementations need so that writers
// never wait for watchers, and a watcher that falls behind skips to the
// newest state instead of receiving old ones. It is store/watchutil under
// the names the stores of this module use.
package latest

import (
	"context"

	"github.com/tenure-go/tenure/store/watchutil"
)

// Box is watchutil.Box.
type Box[T any] = watchutil.Box[T]

// New returns an empty Box.
func New[T any]() *Box[T] { return watchutil.NewBox[T]() }

// Serve is watchutil.Serve.
func Serve[T, E any](ctx context.Context, b *Box[T], out chan<- E, conv func(T) E) {
	watchutil.Serve(ctx, b, out, conv)
}
