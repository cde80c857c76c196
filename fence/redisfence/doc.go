// Package redisfence makes writes to Redis conditional on a fencing token,
// so that a leader whose term has ended cannot overwrite what its successor
// wrote.
//
// [Set] writes a string key in one Lua script run: it reads the highest
// token accepted for the key, refuses the write with an error wrapping
// [fence.ErrStaleToken] when the caller's token is lower, and otherwise
// writes the value and records the token. Tokens equal to the highest are
// accepted, so a leader may write many times within its term.
//
// The token is kept in a key of its own beside the value (see [TokenKey]),
// in the same Redis Cluster slot whenever the key allows it. The token key
// never expires: if it did, a stale leader could write again. Deleting it by
// hand re-opens the key to every token. Set and Highest refuse a key that is
// itself the token key of another ([CheckKey], [ErrInvalidKey]), so that
// fencing one key can never reset the fence of another.
//
// Tokens come from an elector's term (lead.Term.Token) or from a context
// carrying one (fence.WithToken, used by [SetContext]).
package redisfence
