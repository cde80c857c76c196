// Package memstore is an in-process [store.Store] with [store.Watcher],
// [store.FuncWatcher] and [store.Immediate]: for tests, single-process
// applications and the demo.
//
// A Store keeps its records in memory and is safe for concurrent use. It
// behaves like a serializing backend: metadata passes through a
// [store.Codec] (JSON unless [NewWithCodec] says otherwise) on every write and
// every read, so a caller that mutates its metadata (a map, a slice, a
// pointer) after a write, or mutates a record it read, never changes what is
// stored, and the limits of [store.EncodeMetadata] apply. When the metadata
// type holds no pointer, map, slice, interface, channel or function (a
// struct of strings and numbers, say), a copy of a value shares nothing
// with it: each stored version is then decoded once, when it is written,
// and every read and watch event gets its own copy of that value, which
// saves decoding the same bytes once per watcher.
//
// Revisions come from one counter per Store: every write takes the next
// value, so a name's revisions strictly increase and are never reused, not
// even after [Store.Delete].
//
// Two methods exist for tests and have no counterpart in real backends:
// [Store.Delete] simulates data loss, and [Store.PutRaw] stores a record
// with raw metadata bytes, to simulate a corrupt record.
//
// The package passes [github.com/tenure-go/tenure/store/storetest].
//
// # Codec
//
// With the default codec, name the metadata type: memstore.New[Meta]().
// With a codec of your own, the type is inferred from it and checked by the
// compiler: memstore.NewWithCodec(myCodec). Every store of this module
// follows that pattern (see "Store options" in docs/design.md).
package memstore
