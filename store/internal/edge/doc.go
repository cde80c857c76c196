// Package edge holds what the stores of this module repeat at the edges of
// their methods: the checks that open every method (Check), the wrapping
// of an unreadable record in store.ErrCorruptRecord (Corrupt), and the
// RFC 3339 times of the stores that keep records as text (FormatTime,
// ParseTime, StoredTime). The prologue of a write, which custom stores
// need too, is public: store.EncodeRecord.
package edge
