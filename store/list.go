package store

import (
	"context"
	"fmt"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
)

// Listed is one record returned by a Lister.
type Listed[M any] struct {
	// Name is the election name the record is kept under.
	Name string
	// Record is the record as of Revision; zero when Err is set.
	Record lease.Record[M]
	// Revision is the record's revision.
	Revision lease.Revision
	// Err is set when the record exists but cannot be read: it wraps
	// ErrCorruptRecord, as Get's error would. The listing goes on.
	Err error
}

// Lister is implemented by stores that can list the records they keep:
// every record under the store's key prefix, table or namespace. Listing
// is for people and tools (tenure ls, tenure ui); no elector lists, so a
// store that cannot, or a wrapper that hides it, loses nothing but the
// listing.
type Lister[M any] interface {
	// List returns the records whose names start with prefix ("" for
	// every record), sorted by name. A record that cannot be read is
	// listed with its Err set rather than failing the listing; a name the
	// store keeps nothing under is not listed. The listing need not be
	// one snapshot: each record is as of some instant during the call.
	List(ctx context.Context, prefix string) ([]Listed[M], error)
}

// ListerOf returns st's Lister when st implements it, and nil when it
// does not or st is nil. A wrapper that forwards List makes its store
// listable through it.
func ListerOf[M any](st Store[M]) Lister[M] {
	if l, ok := st.(Lister[M]); ok && !nilarg.IsNil(l) {
		return l
	}
	return nil
}

// List lists st's records whose names start with prefix (see Lister). It
// returns an error wrapping errors.ErrUnsupported when st is not a Lister,
// and ErrNilArgument for a nil ctx or st.
func List[M any](ctx context.Context, st Store[M], prefix string) ([]Listed[M], error) {
	switch {
	case ctx == nil:
		return nil, fmt.Errorf("store: List: %w: ctx is nil", ErrNilArgument)
	case nilarg.IsNil(st):
		return nil, fmt.Errorf("store: List: %w: st is nil", ErrNilArgument)
	}
	l := ListerOf(st)
	if l == nil {
		return nil, fmt.Errorf("store: List: %T cannot list its records: %w", st, ErrListUnsupported)
	}
	return l.List(ctx, prefix)
}
