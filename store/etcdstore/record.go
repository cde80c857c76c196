package etcdstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/internal/edge"
)

// stored is the value of a record key: a JSON object with every field
// present, save claim, which only a claim has (lease.Record's Claim), and
// successor, which only a release naming one has (lease.Record's
// Successor).
// Pointers tell a missing field from a zero one.
type stored struct {
	Holder          *string `json:"holder"`
	Token           *uint64 `json:"token"`
	AcquiredAt      *string `json:"acquiredAt"`
	RenewedAt       *string `json:"renewedAt"`
	LeaseDurationNs *int64  `json:"leaseDurationNs"`
	Transitions     *uint64 `json:"transitions"`
	Metadata        *[]byte `json:"metadata"` // the codec's bytes, base64 in JSON
	Claim           *bool   `json:"claim,omitempty"`
	Successor       *string `json:"successor,omitempty"`
}

// encodeRecord returns the value stored for rec with the codec's metadata
// bytes meta and token token. It fails only on a time outside years 0-9999.
func encodeRecord[M any](rec lease.Record[M], token uint64, meta []byte) ([]byte, error) {
	acquired, err := edge.FormatTime(rec.AcquiredAt)
	if err != nil {
		return nil, fmt.Errorf("AcquiredAt: %w", err)
	}
	renewed, err := edge.FormatTime(rec.RenewedAt)
	if err != nil {
		return nil, fmt.Errorf("RenewedAt: %w", err)
	}
	d := int64(rec.LeaseDuration)
	var claim *bool
	if rec.Claim {
		claim = &rec.Claim
	}
	var successor *string
	if rec.Successor != "" {
		successor = &rec.Successor
	}
	return json.Marshal(stored{
		Holder:          &rec.Holder,
		Token:           &token,
		AcquiredAt:      &acquired,
		RenewedAt:       &renewed,
		LeaseDurationNs: &d,
		Transitions:     &rec.Transitions,
		Metadata:        &meta,
		Claim:           claim,
		Successor:       successor,
	})
}

// decodeRecord parses a stored value into a record (without its metadata)
// and the metadata bytes. Unknown or missing fields, trailing data and
// unparsable values are errors; the bounds are store.ValidateStored's.
func decodeRecord(value []byte) (lease.Record[struct{}], []byte, error) {
	var s stored
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return lease.Record[struct{}]{}, nil, fmt.Errorf("the value is not a Tenure record: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return lease.Record[struct{}]{}, nil, errors.New("the value has data after the record")
	}
	var missing []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"holder", s.Holder != nil}, {"token", s.Token != nil}, {"acquiredAt", s.AcquiredAt != nil},
		{"renewedAt", s.RenewedAt != nil}, {"leaseDurationNs", s.LeaseDurationNs != nil},
		{"transitions", s.Transitions != nil}, {"metadata", s.Metadata != nil},
	} {
		if !f.ok {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return lease.Record[struct{}]{}, nil, fmt.Errorf("the record lacks the fields %q", missing)
	}
	acquired, err := edge.ParseTime(*s.AcquiredAt)
	if err != nil {
		return lease.Record[struct{}]{}, nil, fmt.Errorf("acquiredAt: %w", err)
	}
	renewed, err := edge.ParseTime(*s.RenewedAt)
	if err != nil {
		return lease.Record[struct{}]{}, nil, fmt.Errorf("renewedAt: %w", err)
	}
	return lease.Record[struct{}]{
		Holder:        *s.Holder,
		Token:         *s.Token,
		AcquiredAt:    acquired,
		RenewedAt:     renewed,
		LeaseDuration: time.Duration(*s.LeaseDurationNs),
		Transitions:   *s.Transitions,
		Claim:         s.Claim != nil && *s.Claim,
		Successor:     successorOf(s.Successor),
	}, *s.Metadata, nil
}

// The value of a token key is the highest token issued under the name, in
// decimal without leading zeros.
func formatCounter(token uint64) string { return strconv.FormatUint(token, 10) }

// parseCounter reverses formatCounter, refusing anything else and a token
// above lease.MaxToken.
func parseCounter(value []byte) (uint64, error) {
	t, err := strconv.ParseUint(string(value), 10, 64)
	if err != nil || formatCounter(t) != string(value) {
		return 0, fmt.Errorf("the token key holds %q, not a decimal token", value)
	}
	if t > lease.MaxToken {
		return 0, fmt.Errorf("the token key holds %d, above lease.MaxToken (%d)", t, lease.MaxToken)
	}
	return t, nil
}

// successorOf is the successor a stored value names ("" for none).
func successorOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
