// Package endpointstore is an example of a custom store: a module of its
// own, outside Tenure, with a store tied to one metadata type (Endpoint)
// that watches through store/watchutil, passes storetest, opens by URL
// through storeurl.Register, and carries electors whose followers learn the
// leader's endpoint from lead's Leaders.
//
//	go test ./...
package endpointstore
