package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// noReadBack encodes but cannot decode what it encoded.
type noReadBack struct{ store.JSONCodec[string] }

func (noReadBack) Decode([]byte) (string, error) { return "", errors.New("never") }

// nilBytes encodes everything as nil.
type nilBytes struct{}

func (nilBytes) Encode(string) ([]byte, error)   { return nil, nil }
func (nilBytes) Decode(b []byte) (string, error) { return string(b), nil }

func TestEncodeRecord(t *testing.T) {
	held := lease.Record[string]{Holder: "a", Token: 3, LeaseDuration: time.Second, Transitions: 2, Metadata: "x"}
	for _, tt := range []struct {
		name  string
		codec store.Codec[string]
		rec   lease.Record[string]
		want  error // nil: accepted
	}{
		{"held", store.JSONCodec[string]{}, held, nil},
		{"zero", store.JSONCodec[string]{}, lease.Record[string]{}, nil},
		{"no duration while held", store.JSONCodec[string]{}, lease.Record[string]{Holder: "a"}, store.ErrInvalidRecord},
		{"token above MaxToken", store.JSONCodec[string]{}, lease.Record[string]{Token: lease.MaxToken + 1}, store.ErrTokenExhausted},
		{"metadata too large", store.JSONCodec[string]{}, lease.Record[string]{Metadata: strings.Repeat("x", store.MaxMetadataBytes)}, store.ErrMetadataTooLarge},
		{"codec cannot decode its encoding", noReadBack{}, held, store.ErrEncode},
		{"nil codec", nil, held, store.ErrNilArgument},
	} {
		enc, m, err := store.EncodeRecord(tt.codec, tt.rec)
		if tt.want != nil {
			if !errors.Is(err, tt.want) || enc.Metadata != nil || m != "" {
				t.Errorf("%s: EncodeRecord = %+v, %q, %v; want nothing and an error wrapping %v", tt.name, enc, m, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: EncodeRecord: %v", tt.name, err)
			continue
		}
		want := lease.Record[[]byte]{Holder: tt.rec.Holder, Token: tt.rec.Token, LeaseDuration: tt.rec.LeaseDuration, Transitions: tt.rec.Transitions, Metadata: []byte(`"` + tt.rec.Metadata + `"`)}
		if enc.Holder != want.Holder || enc.Token != want.Token || enc.LeaseDuration != want.LeaseDuration || enc.Transitions != want.Transitions || string(enc.Metadata) != string(want.Metadata) || m != tt.rec.Metadata {
			t.Errorf("%s: EncodeRecord = %+v, %q; want %+v, %q", tt.name, enc, m, want, tt.rec.Metadata)
		}
	}
}

// The times lose their monotonic clock readings and nothing else; the
// encoding is never nil.
func TestEncodeRecordTimesAndEmptyEncoding(t *testing.T) {
	now := time.Now()
	enc, _, err := store.EncodeRecord[string](nilBytes{}, lease.Record[string]{AcquiredAt: now, RenewedAt: now.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if enc.AcquiredAt != now.Round(0) || enc.RenewedAt != now.Add(time.Second).Round(0) {
		t.Errorf("times = %v, %v; want %v, %v", enc.AcquiredAt, enc.RenewedAt, now.Round(0), now.Add(time.Second).Round(0))
	}
	if enc.Metadata == nil {
		t.Error("Metadata is nil, want an empty slice")
	}
}
