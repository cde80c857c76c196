package kubestore

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// The annotations Tenure keeps on a Lease, next to its spec. Annotations
// and labels under other keys are never touched.
const (
	// AnnotationPrefix starts every annotation Tenure writes.
	AnnotationPrefix = "tenure.dev/"
	// AnnotationToken holds the fencing token, in decimal.
	AnnotationToken = AnnotationPrefix + "token"
	// AnnotationHolder holds the holder identity Tenure wrote into
	// spec.holderIdentity. When the two differ, someone else (client-go's
	// leaderelection, kubectl) wrote the spec since: see the package
	// documentation for how such a Lease reads.
	AnnotationHolder = AnnotationPrefix + "holder"
	// AnnotationMetadata holds the encoded metadata, when the codec's output
	// is valid UTF-8 (JSON always is).
	AnnotationMetadata = AnnotationPrefix + "metadata"
	// AnnotationMetadataBase64 holds the encoded metadata in standard base64,
	// when the codec's output is not valid UTF-8 (annotation values are
	// strings).
	AnnotationMetadataBase64 = AnnotationPrefix + "metadata-base64"
	// AnnotationLeaseDuration holds the exact LeaseDuration (a Go duration
	// string) when it is not a whole number of seconds; the spec then holds
	// it rounded up.
	AnnotationLeaseDuration = AnnotationPrefix + "lease-duration"
	// AnnotationTransitions holds the exact Transitions (decimal) when it
	// exceeds what spec.leaseTransitions, an int32, can hold.
	AnnotationTransitions = AnnotationPrefix + "transitions"
	// AnnotationRewrite is set, to the writer's clock in Unix nanoseconds,
	// only when a swap writes a record identical to the stored one: the
	// API server does not write an unchanged object, and every swap must
	// produce a new revision. Other writes remove it.
	AnnotationRewrite = AnnotationPrefix + "rewrite"
	// AnnotationClaim is set only on a record that is a claim (lease.Record's
	// Claim), to its token in decimal; other writes remove it. A value
	// other than the record's token (left by a writer that did not know
	// the annotation) means no claim. Like Claim, it is for people: it
	// never makes a Lease unreadable.
	AnnotationClaim = AnnotationPrefix + "claim"
	// AnnotationSuccessor is set only on a released record that names a
	// successor (lease.Record's Successor), to its token in decimal, a
	// colon and the successor's identity; other writes remove it. A token
	// other than the record's (left by a writer that did not know the
	// annotation) means none.
	AnnotationSuccessor = AnnotationPrefix + "successor"
)

// FieldManager is the field manager Tenure names in its writes, as shown by
// kubectl's managedFields.
const FieldManager = "tenure"

// MaxLeaseDuration is the longest LeaseDuration a Lease can carry:
// spec.leaseDurationSeconds is an int32.
const MaxLeaseDuration = math.MaxInt32 * time.Second

// encoded is a record ready to be put on a Lease: the spec fields Tenure
// sets and its annotations (a nil value removes the annotation).
type encoded struct {
	holder      *string
	duration    *int32
	acquire     *metav1.MicroTime
	renew       *metav1.MicroTime
	transitions *int32
	annotations map[string]*string
}

// encodeRecord checks r and turns it, with its metadata already encoded as
// meta, into what a Lease stores.
func encodeRecord[M any](r lease.Record[M], meta []byte) (encoded, error) {
	if r.LeaseDuration > 0 && r.LeaseDuration < time.Second {
		return encoded{}, fmt.Errorf("%w: LeaseDuration is %v, but a Lease counts in whole seconds: use at least 1s", store.ErrInvalidRecord, r.LeaseDuration)
	}
	if r.LeaseDuration > MaxLeaseDuration {
		return encoded{}, fmt.Errorf("%w: LeaseDuration is %v, the most a Lease holds is %v", store.ErrInvalidRecord, r.LeaseDuration, MaxLeaseDuration)
	}
	e := encoded{annotations: map[string]*string{
		AnnotationToken:          ptr(strconv.FormatUint(r.Token, 10)),
		AnnotationHolder:         ptr(r.Holder),
		AnnotationMetadata:       nil,
		AnnotationMetadataBase64: nil,
		AnnotationLeaseDuration:  nil,
		AnnotationTransitions:    nil,
		AnnotationRewrite:        nil,
		AnnotationClaim:          nil,
		AnnotationSuccessor:      nil,
	}}
	if r.Claim {
		e.annotations[AnnotationClaim] = ptr(strconv.FormatUint(r.Token, 10))
	}
	if r.Successor != "" {
		e.annotations[AnnotationSuccessor] = ptr(strconv.FormatUint(r.Token, 10) + ":" + r.Successor)
	}
	if utf8.Valid(meta) {
		e.annotations[AnnotationMetadata] = ptr(string(meta))
	} else {
		e.annotations[AnnotationMetadataBase64] = ptr(base64.StdEncoding.EncodeToString(meta))
	}
	if r.Holder != "" {
		e.holder = ptr(r.Holder)
	}
	if r.LeaseDuration > 0 {
		secs := (r.LeaseDuration + time.Second - 1) / time.Second // rounded up
		e.duration = ptr(int32(secs))
		if r.LeaseDuration%time.Second != 0 {
			e.annotations[AnnotationLeaseDuration] = ptr(r.LeaseDuration.String())
		}
	}
	e.transitions = ptr(int32(min(r.Transitions, math.MaxInt32)))
	if r.Transitions > math.MaxInt32 {
		e.annotations[AnnotationTransitions] = ptr(strconv.FormatUint(r.Transitions, 10))
	}
	if !r.AcquiredAt.IsZero() {
		e.acquire = &metav1.MicroTime{Time: r.AcquiredAt.Truncate(time.Microsecond)}
	}
	if !r.RenewedAt.IsZero() {
		e.renew = &metav1.MicroTime{Time: r.RenewedAt.Truncate(time.Microsecond)}
	}
	return e, nil
}

// apply writes e onto l, keeping every other field, label and annotation.
func (e encoded) apply(l *coordinationv1.Lease) {
	l.Spec.HolderIdentity = e.holder
	l.Spec.LeaseDurationSeconds = e.duration
	l.Spec.AcquireTime = e.acquire
	l.Spec.RenewTime = e.renew
	l.Spec.LeaseTransitions = e.transitions
	for k, v := range e.annotations {
		switch {
		case v != nil:
			if l.Annotations == nil {
				l.Annotations = make(map[string]string)
			}
			l.Annotations[k] = *v
		default:
			delete(l.Annotations, k)
		}
	}
}

// decoded is what a Lease says, before the metadata is decoded.
type decoded struct {
	rec    lease.Record[[]byte]
	rev    lease.Revision
	tenure bool   // Tenure wrote the spec last (see AnnotationHolder)
	floor  uint64 // the token annotation, whoever wrote the spec; 0 if none
	meta   bool   // rec.Metadata holds metadata to decode
}

// decodeLease reads l. It fails with an error wrapping
// store.ErrCorruptRecord when an annotation of Tenure cannot be parsed,
// the metadata is above store.MaxMetadataBytes or the resourceVersion is
// above store.MaxRevision, and with a plain error
// when the resourceVersion is not a number.
func decodeLease(l *coordinationv1.Lease) (decoded, error) {
	rev, err := parseRevision(l.ResourceVersion)
	if err != nil {
		return decoded{}, err
	}
	d := decoded{rev: rev}
	s := l.Spec
	if s.HolderIdentity != nil {
		d.rec.Holder = *s.HolderIdentity
	}
	if s.LeaseDurationSeconds != nil && *s.LeaseDurationSeconds > 0 {
		d.rec.LeaseDuration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if s.LeaseTransitions != nil && *s.LeaseTransitions > 0 {
		d.rec.Transitions = uint64(*s.LeaseTransitions)
	}
	if s.AcquireTime != nil {
		d.rec.AcquiredAt = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		d.rec.RenewedAt = s.RenewTime.Time
	}

	// Every annotation of Tenure must parse, whoever wrote the spec: a
	// Lease that cannot be read is never overwritten.
	a := l.Annotations
	var bad []string
	token, hasToken := a[AnnotationToken]
	if hasToken {
		if d.floor, err = strconv.ParseUint(token, 10, 64); err != nil || d.floor > lease.MaxToken {
			bad = append(bad, fmt.Sprintf("%s %.40q is not a token in [0, %d] (lease.MaxToken)", AnnotationToken, token, lease.MaxToken))
		}
	}
	var exactDur time.Duration
	if v, ok := a[AnnotationLeaseDuration]; ok {
		if exactDur, err = time.ParseDuration(v); err != nil || exactDur < time.Second {
			bad = append(bad, fmt.Sprintf("%s %q is not a duration of at least 1s", AnnotationLeaseDuration, v))
		}
	}
	var exactTrans uint64
	if v, ok := a[AnnotationTransitions]; ok {
		if exactTrans, err = strconv.ParseUint(v, 10, 64); err != nil || exactTrans > lease.MaxToken {
			bad = append(bad, fmt.Sprintf("%s %.40q is not a count in [0, %d] (lease.MaxToken)", AnnotationTransitions, v, lease.MaxToken))
		}
	}
	var meta []byte
	plain, hasPlain := a[AnnotationMetadata]
	b64, hasB64 := a[AnnotationMetadataBase64]
	switch {
	case hasPlain && hasB64:
		bad = append(bad, fmt.Sprintf("both %s and %s are set", AnnotationMetadata, AnnotationMetadataBase64))
	case hasPlain:
		meta, d.meta = []byte(plain), true
	case hasB64:
		if meta, err = base64.StdEncoding.DecodeString(b64); err != nil {
			bad = append(bad, fmt.Sprintf("%s is not base64: %v", AnnotationMetadataBase64, err))
		}
		d.meta = true
	}
	if len(meta) > store.MaxMetadataBytes {
		bad = append(bad, fmt.Sprintf("the metadata is %d bytes, the limit is %d (store.MaxMetadataBytes)", len(meta), store.MaxMetadataBytes))
	}
	if len(bad) > 0 {
		return decoded{}, fmt.Errorf("%w: Lease %s/%s: %s", store.ErrCorruptRecord, l.Namespace, l.Name, strings.Join(bad, "; "))
	}

	holder, hasHolder := a[AnnotationHolder]
	d.tenure = hasToken && hasHolder && holder == d.rec.Holder
	if !d.tenure {
		// Someone else wrote the spec last: it has no token of Tenure's and
		// no metadata; what Tenure wrote before is stale.
		d.meta = false
		return d, nil
	}
	d.rec.Token = d.floor
	d.rec.Metadata = meta
	d.rec.Claim = hasToken && a[AnnotationClaim] == token
	if succ, ok := strings.CutPrefix(a[AnnotationSuccessor], token+":"); ok && hasToken {
		d.rec.Successor = succ
	}
	// The exact values count only while the spec still holds them rounded
	// (someone else may have changed the spec and kept the annotations).
	if exactDur > 0 && s.LeaseDurationSeconds != nil && int64(*s.LeaseDurationSeconds) == int64((exactDur+time.Second-1)/time.Second) {
		d.rec.LeaseDuration = exactDur
	}
	if exactTrans > math.MaxInt32 && s.LeaseTransitions != nil && *s.LeaseTransitions == math.MaxInt32 {
		d.rec.Transitions = exactTrans
	}
	return d, nil
}

// errRevision is wrapped by the error for a resourceVersion that is not a
// positive decimal number.
var errRevision = errors.New("kubestore: resourceVersion is not a positive decimal number (the store needs an etcd-backed API server)")

// parseRevision reads a resourceVersion as the revision it is: an etcd
// revision, a positive decimal number that grows with every write. One
// above store.MaxRevision is a corrupt record (store.ErrCorruptRecord);
// one that is no such number at all says the API server is not backed by
// etcd (errRevision).
func parseRevision(rv string) (lease.Revision, error) {
	n, err := strconv.ParseUint(rv, 10, 64)
	switch {
	case err == nil && n > uint64(store.MaxRevision), errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%w: resourceVersion %q is above store.MaxRevision (%d)", store.ErrCorruptRecord, rv, store.MaxRevision)
	case err != nil || n == 0:
		return 0, fmt.Errorf("%w: %q", errRevision, rv)
	}
	return lease.Revision(n), nil
}

// formatRevision is the resourceVersion of revision r.
func formatRevision(r lease.Revision) string { return strconv.FormatUint(uint64(r), 10) }

func ptr[T any](v T) *T { return &v }
