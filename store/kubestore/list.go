package kubestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

var _ store.Lister[struct{}] = (*Store[struct{}])(nil)

// listPage is how many Leases each LIST request of List asks for: 10,000
// Leases take two requests, well within client-go's default rate limit
// (5 a second, bursts of 10) when listed every second. It is a variable
// for the tests.
var listPage int64 = 5000

// List returns the records of the Leases of the Store's namespace whose
// names start with prefix, sorted by name: LIST requests of up to 5,000
// Leases each, paginated with the server's continue token (the API server
// serves them from one snapshot). The API server cannot filter names by
// prefix, so every Lease of the namespace is fetched. Each Lease reads as
// Get reads it, including those Tenure did not write (see the package
// documentation); one that cannot be read is listed with Err wrapping
// [store.ErrCorruptRecord]. It needs the "list" verb on leases: a 403
// answer wraps [ErrForbidden]. It is part of [store.Lister].
func (s *Store[M]) List(ctx context.Context, prefix string) ([]store.Listed[M], error) {
	if err := edge.CheckList(ctx, "kubestore", prefix, s.Validate()); err != nil {
		return nil, err
	}
	var out []store.Listed[M]
	opts := metav1.ListOptions{Limit: listPage}
	// The server's answers are untrusted: a continue token sent before,
	// a page without a Lease, or a Lease listed twice would make the
	// listing go round for ever.
	tokens := make(map[string]bool)
	names := make(map[string]bool)
	for {
		ls, err := s.leases.List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("kubestore: List %q: %w: the API server refused \"list\" on leases (coordination.k8s.io) in namespace %q; listing needs list on leases, which electors do not: %w",
				prefix, ErrForbidden, s.namespace, err)
		}
		if err != nil {
			return nil, s.fail(ctx, "List", prefix, "list", err)
		}
		if ls.Continue != "" && len(ls.Items) == 0 {
			return nil, fmt.Errorf("kubestore: List %q: %w: a page without a Lease, with a continue token", prefix, ErrUnexpectedReply)
		}
		for i := range ls.Items {
			l := &ls.Items[i]
			if names[l.Name] {
				return nil, fmt.Errorf("kubestore: List %q: %w: Lease %.300q listed twice", prefix, ErrUnexpectedReply, l.Name)
			}
			names[l.Name] = true
			if !strings.HasPrefix(l.Name, prefix) || ValidateName(l.Name) != nil {
				continue
			}
			rec, rev, _, err := s.decode(l)
			if err != nil && !errors.Is(err, store.ErrCorruptRecord) {
				err = fmt.Errorf("%w: %w", store.ErrCorruptRecord, err)
			}
			if err != nil {
				err = fmt.Errorf("kubestore: List: %w", err)
			}
			out = append(out, store.Listed[M]{Name: l.Name, Record: rec, Revision: rev, Err: err})
		}
		if ls.Continue == "" {
			break
		}
		tokens[opts.Continue] = true
		if tokens[ls.Continue] {
			return nil, fmt.Errorf("kubestore: List %q: %w: a continue token sent before, the listing would go round for ever", prefix, ErrUnexpectedReply)
		}
		opts.Continue = ls.Continue
	}
	// The API server returns Leases in the byte order of their names;
	// sorting keeps the promise whatever the server.
	slices.SortStableFunc(out, func(a, b store.Listed[M]) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
