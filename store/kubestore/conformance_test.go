package kubestore_test

import (
	"testing"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/storetest"
)

// The store passes the conformance suite against a real API server.
func TestConformance(t *testing.T) {
	e := newEnv(t, "conformance")
	storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
		return newStore[storetest.Meta](t, e.client, e.ns)
	})
}
