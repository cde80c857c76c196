// Package ui serves the live page of tenure ui: every election a store
// keeps under a prefix, as a table (name, holder, token, since, last
// renewal, transitions, metadata) that updates as the records change, and
// a timeline of each name's recent handovers.
//
// A Server learns the records by listing the store (store.Lister) every
// Config.Interval, and, where the store watches (store.Watcher), by
// watching up to Config.MaxWatches of the names listed, so that a
// handover shows at once rather than at the next listing. Events of a
// store whose events are not authentic (store.WatchCapabilities: Redis
// Pub/Sub, PostgreSQL NOTIFY, which anyone who can connect may publish
// on) are hints: the Server reads the record and shows what it read. A
// store that does not watch is polled by the listing alone. With Config.Names, the
// Server reads those names instead of listing, for a store that cannot
// list.
//
// The page is three embedded files (HTML, CSS, JavaScript) and fetches
// nothing else. It reads the state from /api/state (JSON) and follows it
// through /api/events (server-sent events: a "reset" message with every
// row, then "update" messages with the rows that changed and the names
// removed). Everything shown comes from the store, which anyone who can
// write it controls: the JSON escapes <, > and &, the page puts text in
// the document only as text (never as HTML), and a Content-Security-Policy
// forbids inline scripts and every other origin. Requests whose Host is
// neither an IP address, localhost nor one of Config.Hosts are refused,
// so that a web page cannot read the state through DNS rebinding.
//
// Memory is bounded: at most Config.MaxNames names (the listing is cut
// there, and the page says so), Config.History handovers per name,
// Config.MaxMetadataBytes of each record's metadata, the latest 1,024
// removals, and at most 64 pages following the events at once, each with
// a fixed amount.
//
// The package is internal: the JSON it serves is the page's, and may
// change with it.
package ui
