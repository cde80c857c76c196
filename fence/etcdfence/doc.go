// Package etcdfence makes writes to etcd conditional on a fencing token, so
// that a leader whose term has ended cannot overwrite what its successor
// wrote.
//
// [Put] and [Do] write in one etcd transaction that also checks the highest
// token accepted for the key (or resource) and records the caller's: a
// write with a lower token is refused with an error wrapping
// [fence.ErrStaleToken] and changes nothing. Tokens equal to the highest
// are accepted, so a leader may write many times within its term; such a
// write is one round trip (the transaction compares the token key's value
// with the caller's token). The first write of a new term takes two: the
// first transaction reports the highest token, and the second writes,
// comparing the token key's mod revision with the one just read.
//
// The highest token is kept in a key of its own beside the value
// ([TokenKey]: the key followed by ":fence-token"), in decimal. It has no
// lease and never expires: if it did, a stale leader could write again.
// Deleting it by hand re-opens the key to every token. Put, Do and Highest
// refuse a key that is itself a token key ([CheckKey], [ErrInvalidKey]),
// so that fencing one key never resets the fence of another; a token key
// holding something other than a token is reported as [ErrCorruptToken]
// and nothing is written until it is repaired or deleted.
//
// Tokens come from an elector's term (lead.Term.Token) or from a context
// carrying one (fence.WithToken, used by [PutContext] and [DoContext]).
package etcdfence
