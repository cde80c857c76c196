package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// bare is a Store with neither Lossy nor Watcher.
type bare struct{}

func (bare) Get(context.Context, string) (lease.Record[int], lease.Revision, error) {
	return lease.Record[int]{}, 0, store.ErrNotFound
}

func (bare) CompareAndSwap(_ context.Context, _ string, _ lease.Revision, next lease.Record[int]) (lease.Record[int], lease.Revision, error) {
	return next, 1, nil
}

// lossless says it keeps every record, and watches.
type lossless struct {
	bare
	watched *string
}

func (lossless) MayLoseRecords() bool { return false }

func (l lossless) Watch(_ context.Context, name string) (<-chan store.Event[int], error) {
	*l.watched = name
	return make(chan store.Event[int]), nil
}

// wrapper embeds a store and forwards the optional interfaces with the
// package's helpers.
type wrapper struct{ store.Store[int] }

func (w wrapper) MayLoseRecords() bool { return store.MayLoseRecords(w.Store) }

func (w wrapper) Watch(ctx context.Context, name string) (<-chan store.Event[int], error) {
	return store.Watch(ctx, w.Store, name)
}

func TestMayLoseRecords(t *testing.T) {
	var watched string
	var nilLossless *lossyPtr
	tests := []struct {
		name string
		st   store.Store[int]
		want bool
	}{
		{"nil store", nil, true},
		{"store without Lossy", bare{}, true},
		{"store that says no", lossless{watched: &watched}, false},
		{"embedding wrapper hides it", struct{ store.Store[int] }{lossless{watched: &watched}}, true},
		{"forwarding wrapper", wrapper{lossless{watched: &watched}}, false},
		{"forwarding wrapper over a store without Lossy", wrapper{bare{}}, true},
		{"typed nil Lossy", nilLossless, true},
	}
	for _, tt := range tests {
		if got := store.MayLoseRecords(tt.st); got != tt.want {
			t.Errorf("%s: MayLoseRecords = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// lossyPtr has MayLoseRecords on a pointer that it dereferences.
type lossyPtr struct {
	bare
	may bool
}

func (l *lossyPtr) MayLoseRecords() bool { return l.may }

func TestWatchHelper(t *testing.T) {
	ctx := context.Background()
	var watched string
	if _, err := store.Watch(ctx, wrapper{lossless{watched: &watched}}, "job"); err != nil || watched != "job" {
		t.Fatalf("Watch through a forwarding wrapper = %v, watched %q", err, watched)
	}
	_, err := store.Watch(ctx, wrapper{bare{}}, "job")
	if !errors.Is(err, store.ErrWatchUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Watch of a store that cannot watch = %v, want ErrWatchUnsupported", err)
	}
}
