package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tenure-go/tenure/store"
)

var _ store.Lister[struct{}] = (*Store[struct{}])(nil)

// List returns the records whose names start with prefix, sorted by name:
// one snapshot, taken under the Store's lock. A record whose metadata
// cannot be decoded is listed with Err wrapping [store.ErrCorruptRecord].
// It is part of [store.Lister].
func (s *Store[M]) List(ctx context.Context, prefix string) ([]store.Listed[M], error) {
	if ctx == nil {
		return nil, fmt.Errorf("memstore: List: %w: ctx is nil", store.ErrNilArgument)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type found struct {
		name string
		e    *entry
	}
	s.mu.Lock()
	all := make([]found, 0, len(s.names))
	for name, sl := range s.names {
		if sl.cur != nil && strings.HasPrefix(name, prefix) {
			all = append(all, found{name, sl.cur})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b found) int { return strings.Compare(a.name, b.name) })
	out := make([]store.Listed[M], len(all))
	for i, f := range all {
		rec, err := s.decode(f.name, f.e)
		out[i] = store.Listed[M]{Name: f.name, Record: rec, Revision: f.e.rev, Err: err}
	}
	return out, nil
}
