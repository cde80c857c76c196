package kubestore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
	"github.com/tenure-go/tenure/store/watchutil"
)

var (
	// ErrForbidden is wrapped by the errors of requests the API server
	// refused with 403 Forbidden: the credentials lack a verb on leases in
	// the namespace. The error names the verb; the minimal Role is in the
	// package documentation.
	ErrForbidden = errors.New("kubestore: forbidden")
	// ErrInvalidNamespace is wrapped by New's error for a namespace that is
	// empty or not a DNS-1123 label.
	ErrInvalidNamespace = errors.New("kubestore: invalid namespace")
	// ErrUnexpectedReply is wrapped by the errors of requests the API
	// server answered with something it cannot produce (a List whose
	// continue tokens go round in a circle, say).
	ErrUnexpectedReply = errors.New("kubestore: unexpected reply")
)

// Store keeps lease records with metadata of type M in coordination.k8s.io/v1
// Lease objects of one namespace, one Lease per name. It implements
// [store.Store] and [store.Watcher] and is safe for concurrent use. The zero
// Store is not usable: call New. Its methods, and those given a nil ctx,
// return an error wrapping [store.ErrNilArgument].
type Store[M any] struct {
	client    coordinationclient.LeasesGetter
	leases    coordinationclient.LeaseInterface
	namespace string
	codec     store.Codec[M]

	hub *watchutil.Hub[string, change] // the shared watch of the namespace
	src *source[M]                     // what hub watches through
	now func() time.Time               // the wall clock that floors new terms' tokens

	mu   sync.Mutex
	seen map[string]*seen // by name
}

var (
	_ store.Store[struct{}]   = (*Store[struct{}])(nil)
	_ store.Watcher[struct{}] = (*Store[struct{}])(nil)
)

// seen is what a Store remembers of one name: the newest Lease it saw, and
// the largest token it ever saw there.
type seen struct {
	lease *coordinationv1.Lease // never modified; nil once seen deleted
	rev   lease.Revision        // of lease, or of its deletion
	token uint64                // largest token seen under the name
}

// New returns a Store that keeps its Leases in namespace through client,
// the coordination/v1 client: a clientset's CoordinationV1(), or one made
// with [coordinationclient.NewForConfig] when the program needs no other
// API group (it then links far less of client-go). It fails on a nil client
// (an error wrapping [store.ErrNilArgument]) or a namespace that is not a
// valid namespace name. Metadata is encoded with [store.JSONCodec]; see
// NewWithCodec for another codec. New sends no request.
func New[M any](client coordinationclient.LeasesGetter, namespace string) (*Store[M], error) {
	return NewWithCodec[M](client, namespace, nil)
}

// NewWithCodec is New with metadata encoded and decoded by codec, whose
// type fixes the Store's metadata type. A nil codec means
// [store.JSONCodec].
func NewWithCodec[M any](client coordinationclient.LeasesGetter, namespace string, codec store.Codec[M]) (*Store[M], error) {
	if nilarg.IsNil(client) {
		return nil, fmt.Errorf("kubestore: New: %w: client is nil", store.ErrNilArgument)
	}
	if namespace == "" {
		return nil, fmt.Errorf("kubestore: New: %w: the namespace is empty", ErrInvalidNamespace)
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("kubestore: New: %w: %q: %s", ErrInvalidNamespace, namespace, strings.Join(errs, "; "))
	}
	if nilarg.IsNil(codec) {
		codec = store.JSONCodec[M]{}
	}
	s := &Store[M]{
		client:    client,
		leases:    client.Leases(namespace),
		namespace: namespace,
		codec:     codec,
		now:       time.Now,
		seen:      make(map[string]*seen),
	}
	s.src = &source[M]{s: s}
	s.hub = watchutil.NewHub[string, change](s.src, watchutil.HubOptions{})
	return s, nil
}

// Namespace returns the namespace of the Store's Leases.
func (s *Store[M]) Namespace() string {
	if s == nil {
		return ""
	}
	return s.namespace
}

// Get returns the record of the Lease name and its revision (its
// resourceVersion): one GET request. It returns an error wrapping
// [store.ErrNotFound] when there is no such Lease, [store.ErrCorruptRecord]
// when an annotation of Tenure's cannot be read, [store.ErrInvalidName] for a
// bad name, [ErrForbidden] when RBAC refuses "get", and one wrapping
// ctx.Err() when ctx has ended. A Lease that Tenure did not write last reads
// as described in the package documentation.
func (s *Store[M]) Get(ctx context.Context, name string) (lease.Record[M], lease.Revision, error) {
	if err := s.check(ctx, "Get", name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	l, err := s.get(ctx, name)
	if err != nil {
		return lease.Record[M]{}, 0, s.fail(ctx, "Get", name, "get", err)
	}
	if l == nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: Get %q: Lease %s/%s: %w", name, s.namespace, name, store.ErrNotFound)
	}
	rec, rev, _, err := s.decode(l)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: Get %q: %w", name, err)
	}
	return rec, rev, nil
}

// CompareAndSwap writes next to the Lease name if its resourceVersion is
// still expected, and returns the stored record and its new revision.
//
// With expected zero it creates the Lease (one POST); if it exists already,
// the result is an error wrapping [store.ErrConflict] with the current
// record, read with a GET. Otherwise it updates the Lease (one PUT with
// resourceVersion expected) from the copy of it the Store saw last, keeping
// every label, annotation and spec field that is not Tenure's; a 409 answer
// becomes [store.ErrConflict] with the current record, read with a GET. When
// the Store has not seen revision expected itself (another Store instance
// handed it out), it reads the Lease first: a PUT needs the whole object.
// So a swap is one round trip, and two on a conflict or a cache miss.
//
// A Lease whose annotations cannot be read is never overwritten: the error
// wraps [store.ErrCorruptRecord]. CompareAndSwap also refuses a bad name
// ([store.ErrInvalidName]); a record that breaks [store.ValidateRecord], or
// whose LeaseDuration is between 0 and 1s or above [MaxLeaseDuration]
// ([store.ErrInvalidRecord]); metadata that cannot be encoded
// ([store.ErrEncode]) or is too large ([store.ErrMetadataTooLarge]); and an
// ended ctx. A 403 answer wraps [ErrForbidden] and names the missing verb.
//
// A write that continues the term of a Lease Tenure wrote last
// ([store.Renews]) keeps its token; any other write starts a new term, whose
// Token is raised above the stored token annotation (which survives writes
// of others, see the package documentation), above every token this
// Store saw under the name, even of a Lease deleted since, and to at least
// the wall clock in microseconds ([store.NewToken], [store.ClockToken]), so
// that a term after a restore of etcd never reuses a token. When no token up to lease.MaxToken is left, nothing
// is written and the error wraps [store.ErrTokenExhausted]. A Lease outside
// the bounds of [store.ValidateStored] is [store.ErrCorruptRecord] and is
// not overwritten.
func (s *Store[M]) CompareAndSwap(ctx context.Context, name string, expected lease.Revision, next lease.Record[M]) (lease.Record[M], lease.Revision, error) {
	const op = "CompareAndSwap"
	if err := s.check(ctx, op, name); err != nil {
		return lease.Record[M]{}, 0, err
	}
	enc, _, err := store.EncodeRecord(s.codec, next)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: %w", op, name, err)
	}
	meta := enc.Metadata
	if _, err := encodeRecord(next, meta); err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: %w", op, name, err)
	}
	if expected == 0 {
		return s.create(ctx, name, next, meta)
	}
	return s.update(ctx, name, expected, next, meta)
}

// create makes the Lease name hold next.
func (s *Store[M]) create(ctx context.Context, name string, next lease.Record[M], meta []byte) (lease.Record[M], lease.Revision, error) {
	const op = "CompareAndSwap"
	// A create starts a term. If the Lease was deleted after this Store
	// saw a token, the new term's token is above it, and it is above the
	// wall clock (store.ClockToken) in any case.
	token, err := store.NewToken(next.Token, max(s.seenToken(name), store.ClockToken(s.now())))
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: %w", op, name, err)
	}
	next.Token = token
	enc, err := encodeRecord(next, meta)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: %w", op, name, err)
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace}}
	enc.apply(l)
	got, err := s.leases.Create(ctx, l, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		return s.written(name, 0, got)
	case apierrors.IsAlreadyExists(err):
		return s.conflict(ctx, name, 0)
	default:
		return lease.Record[M]{}, 0, s.fail(ctx, op, name, "create", err)
	}
}

// update makes the Lease name hold next if it is at revision expected.
func (s *Store[M]) update(ctx context.Context, name string, expected lease.Revision, next lease.Record[M], meta []byte) (lease.Record[M], lease.Revision, error) {
	const op = "CompareAndSwap"
	s.mu.Lock()
	var base *coordinationv1.Lease
	if sn := s.seen[name]; sn != nil && sn.rev == expected {
		base = sn.lease // nil when expected is the revision of a deletion
	}
	s.mu.Unlock()
	if base == nil {
		// Not seen here: read it, since a PUT carries the whole object.
		l, err := s.get(ctx, name)
		if err != nil {
			return lease.Record[M]{}, 0, s.fail(ctx, op, name, "get", err)
		}
		if l == nil {
			return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: expected revision %d, the Lease does not exist: %w", op, name, expected, store.ErrConflict)
		}
		rec, rev, _, err := s.decode(l)
		if err != nil {
			return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: the Lease is not overwritten: %w", op, name, err)
		}
		if rev != expected {
			return rec, rev, fmt.Errorf("kubestore: %s %q: expected revision %d, found %d: %w", op, name, expected, rev, store.ErrConflict)
		}
		base = l
	}
	// Only a Lease that reads in full is overwritten.
	if _, _, _, err := s.decode(base); err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: the Lease is not overwritten: %w", op, name, err)
	}
	cur, err := decodeLease(base)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: the Lease is not overwritten: %w", op, name, err)
	}
	if !cur.tenure || !store.Renews(cur.rec, next) {
		// A new term (any write over a Lease someone else wrote last is
		// one): its token goes above the token annotation, which survives
		// writes of others, above every token this Store saw under the
		// name, and above the wall clock (store.ClockToken), which no
		// restore of etcd takes back.
		token, err := store.NewToken(next.Token, max(cur.floor, s.seenToken(name), store.ClockToken(s.now())))
		if err != nil {
			return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: nothing was written: %w", op, name, err)
		}
		next.Token = token
	}
	enc, err := encodeRecord(next, meta)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: %w", op, name, err)
	}
	l := base.DeepCopy()
	l.ResourceVersion = formatRevision(expected)
	enc.apply(l)
	if apiequality.Semantic.DeepEqual(l.Spec, base.Spec) && apiequality.Semantic.DeepEqual(l.Annotations, base.Annotations) {
		// The API server does not write an unchanged object: the
		// resourceVersion would stay, and a renewal that leaves the
		// revision unchanged would look like no renewal to the followers.
		l.Annotations[AnnotationRewrite] = strconv.FormatInt(s.now().UnixNano(), 10)
	}
	got, err := s.leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: FieldManager})
	switch {
	case err == nil && got.ResourceVersion == l.ResourceVersion:
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: the API server kept resourceVersion %s for a write", op, name, got.ResourceVersion)
	case err == nil:
		return s.written(name, expected, got)
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return s.conflict(ctx, name, expected)
	default:
		return lease.Record[M]{}, 0, s.fail(ctx, op, name, "update", err)
	}
}

// written returns the record of l, which a swap from revision expected
// just wrote. A revision not above expected is refused: a store's own
// writes never go back (an etcd-backed API server's resourceVersions
// grow with every write).
func (s *Store[M]) written(name string, expected lease.Revision, l *coordinationv1.Lease) (lease.Record[M], lease.Revision, error) {
	rec, rev, _, err := s.decode(l)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: CompareAndSwap %q: reading back the Lease written: %w", name, err)
	}
	if rev <= expected {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: CompareAndSwap %q: the API server answered a write from resourceVersion %d with %d, not above it", name, expected, rev)
	}
	return rec, rev, nil
}

// conflict reads the Lease name after a swap from expected failed, and
// returns it with an error wrapping store.ErrConflict.
func (s *Store[M]) conflict(ctx context.Context, name string, expected lease.Revision) (lease.Record[M], lease.Revision, error) {
	const op = "CompareAndSwap"
	l, err := s.get(ctx, name)
	if err != nil {
		return lease.Record[M]{}, 0, s.fail(ctx, op, name, "get", fmt.Errorf("reading the Lease after a conflict: %w", err))
	}
	if l == nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: expected revision %d, the Lease does not exist: %w", op, name, expected, store.ErrConflict)
	}
	rec, rev, _, err := s.decode(l)
	if err != nil {
		return lease.Record[M]{}, 0, fmt.Errorf("kubestore: %s %q: %w", op, name, err)
	}
	return rec, rev, fmt.Errorf("kubestore: %s %q: expected revision %d, found %d: %w", op, name, expected, rev, store.ErrConflict)
}

// get reads the Lease name; nil when it does not exist.
func (s *Store[M]) get(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	l, err := s.leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s.forget(name, 0)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// decode returns the record of l with its metadata decoded, and remembers l
// when it can be read. tenure reports whether Tenure wrote the Lease last.
func (s *Store[M]) decode(l *coordinationv1.Lease) (rec lease.Record[M], rev lease.Revision, tenure bool, err error) {
	d, err := decodeLease(l)
	if err != nil {
		return lease.Record[M]{}, 0, false, err
	}
	if err := store.ValidateStored(d.rec); err != nil {
		return lease.Record[M]{}, 0, false, fmt.Errorf("lease %s/%s: %w", l.Namespace, l.Name, err)
	}
	rec = lease.Record[M]{
		Holder:        d.rec.Holder,
		Token:         d.rec.Token,
		AcquiredAt:    d.rec.AcquiredAt,
		RenewedAt:     d.rec.RenewedAt,
		LeaseDuration: d.rec.LeaseDuration,
		Transitions:   d.rec.Transitions,
		Claim:         d.rec.Claim,
		Successor:     d.rec.Successor,
	}
	if d.meta {
		if rec.Metadata, err = s.codec.Decode(d.rec.Metadata); err != nil {
			if !errors.Is(err, store.ErrCorruptRecord) {
				err = fmt.Errorf("%w: %w", store.ErrCorruptRecord, err)
			}
			return lease.Record[M]{}, 0, false, fmt.Errorf("lease %s/%s: metadata: %w", l.Namespace, l.Name, err)
		}
	}
	s.remember(l, d)
	return rec, d.rev, d.tenure, nil
}

// seenToken returns the largest token this Store saw under name.
func (s *Store[M]) seenToken(name string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.seen[name]; sn != nil {
		return sn.token
	}
	return 0
}

// remember keeps l as the newest Lease seen under its name, unless a newer
// one was seen already.
func (s *Store[M]) remember(l *coordinationv1.Lease, d decoded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.seen[l.Name]
	if sn == nil {
		sn = &seen{}
		s.seen[l.Name] = sn
	}
	sn.token = max(sn.token, d.floor)
	if d.rev >= sn.rev {
		sn.lease, sn.rev = l, d.rev
	}
}

// forget records that the Lease name was found deleted at revision rev (0
// when unknown), keeping the largest token seen.
func (s *Store[M]) forget(name string, rev lease.Revision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.seen[name]; sn != nil && (rev == 0 || rev >= sn.rev) {
		sn.lease, sn.rev = nil, rev
	}
}

// fail wraps err, the failure of the request verb made by op on the Lease
// name: with ctx.Err() when ctx has ended, with ErrForbidden on a 403.
func (s *Store[M]) fail(ctx context.Context, op, name, verb string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("kubestore: %s %q: %w: the API server refused %q on leases (coordination.k8s.io) in namespace %q; grant get, create, update and watch on leases (see the package documentation): %w",
			op, name, ErrForbidden, verb, s.namespace, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("kubestore: %s %q: %w: %w", op, name, cerr, err)
	}
	return fmt.Errorf("kubestore: %s %q: %w", op, name, err)
}

// check refuses a Store not made by New, a nil or ended ctx, then a bad
// name, for operation op.
func (s *Store[M]) check(ctx context.Context, op, name string) error {
	return edge.Check(ctx, "kubestore", op, name, s.Validate(), ValidateName)
}

// ValidateName checks that name can name a Lease: it must pass
// [store.ValidateName] and be an RFC 1123 subdomain (lowercase letters,
// digits, '-' and '.', starting and ending with a letter or digit, at most
// 253 characters). Names are used as they are, never mapped, so that
// `kubectl get lease NAME` finds them. The error wraps
// [store.ErrInvalidName].
func ValidateName(name string) error {
	if err := store.ValidateName(name); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%w: %q is not a valid Lease name: %s", store.ErrInvalidName, name, strings.Join(errs, "; "))
	}
	return nil
}
