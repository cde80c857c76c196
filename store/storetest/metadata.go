package storetest

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/store"
)

// Option describes the metadata type M to Run, or gives a check what it
// needs beyond a fresh store (WithReopen, WithDelete).
type Option[M any] func(*metadata[M])

// WithSamples gives the metadata values the suite writes and reads back:
// every record it writes carries one of them, and the MetadataRoundTrip
// check writes each. Each must be within what the store accepts
// (store.MaxMetadataBytes, encoded). For Meta the suite has its own, which
// samples passed here replace. A generator is a loop that fills the slice.
func WithSamples[M any](samples ...M) Option[M] {
	return func(md *metadata[M]) { md.samples = append(md.samples, samples...) }
}

// WithOversized gives a function returning a value that encodes to more
// than store.MaxMetadataBytes, which the store must refuse with
// store.ErrMetadataTooLarge (the OversizedMetadata check). Without it, for
// an M other than Meta, that check is skipped.
func WithOversized[M any](oversized func() M) Option[M] {
	return func(md *metadata[M]) { md.oversized = oversized }
}

// WithShared gives what the CallerOwnsMetadata check needs: fresh returns a
// new value holding references a store could keep (maps, slices,
// pointers), the same each time; mutate changes everything fresh's value
// refers to. The check writes such a value, mutates what it wrote and what
// it read, and expects the store to hold the value as written. Without it,
// for an M other than Meta, that check is skipped.
func WithShared[M any](fresh func() M, mutate func(*M)) Option[M] {
	return func(md *metadata[M]) { md.fresh, md.mutate = fresh, mutate }
}

// metadata is what the suite knows of M, and of the store beyond
// newStore.
type metadata[M any] struct {
	samples   []M
	labels    []string // one per sample, for subtest names; nil for the caller's
	oversized func() M
	fresh     func() M
	mutate    func(*M)
	reopen    func(t *testing.T) store.Store[M]                  // WithReopen; nil without
	del       func(t *testing.T, name string)                    // WithDelete; nil without
	corrupt   func(t *testing.T, st store.Store[M], name string) // WithCorrupt; nil without
	noList    bool                                               // WithoutList
	stamps    bool                                               // WithStamps
}

// metadataOf applies opts over the defaults for M: the suite's own values
// when M is Meta, nothing otherwise.
func metadataOf[M any](opts []Option[M]) (*metadata[M], error) {
	md := &metadata[M]{}
	var custom bool
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d of %d is nil", store.ErrNilArgument, i+1, len(opts))
		}
		before := len(md.samples)
		o(md)
		custom = custom || len(md.samples) != before
	}
	if m, ok := any(md).(*metadata[Meta]); ok {
		metaDefaults(m, custom)
	}
	if len(md.samples) == 0 {
		var zero M
		return nil, fmt.Errorf("%w: the suite has no metadata values of type %s: pass some with storetest.WithSamples", store.ErrNilArgument, reflect.TypeOf(&zero).Elem())
	}
	if md.fresh == nil != (md.mutate == nil) {
		return nil, fmt.Errorf("%w: WithShared: fresh and mutate must both be set", store.ErrNilArgument)
	}
	return md, nil
}

// metaDefaults fills in the suite's own values of Meta where the options
// left them unset; samples passed to WithSamples replace the suite's.
func metaDefaults(md *metadata[Meta], custom bool) {
	if !custom {
		md.samples, md.labels = nil, nil
		for _, c := range metaSamples() {
			md.samples = append(md.samples, c.m)
			md.labels = append(md.labels, c.label)
		}
	}
	if md.oversized == nil {
		md.oversized = func() Meta { return Meta{Blob: strings.Repeat("x", store.MaxMetadataBytes+1)} }
	}
	if md.fresh == nil {
		md.fresh, md.mutate = sharedMeta, mutate
	}
}

// forHolder returns the sample a record of holder carries: the suite's own
// Meta records name their holder, other samples are picked by the holder's
// hash.
func (md *metadata[M]) forHolder(holder string) M {
	if _, ok := any(md).(*metadata[Meta]); ok && len(md.labels) > 0 {
		return any(Meta{Name: holder, Labels: map[string]string{"holder": holder}}).(M)
	}
	h := fnv.New32a()
	h.Write([]byte(holder))
	return md.samples[int(h.Sum32()%uint32(len(md.samples)))]
}

// label names sample i in subtest and error messages.
func (md *metadata[M]) label(i int) string {
	if i < len(md.labels) {
		return md.labels[i]
	}
	return fmt.Sprintf("sample-%d", i)
}
