package storeurl

import (
	"context"
	"net/url"
)

// openKube returns the opener of kubernetes:// URLs.
func openKube[M any](scheme string) (func(context.Context, *url.URL) (Store[M], error), bool) {
	return nil, false
}
