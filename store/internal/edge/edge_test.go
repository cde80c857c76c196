package edge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

// Check refuses, in this order, an unusable store, a nil ctx, an ended ctx
// and a bad name, and names the package and the operation.
func TestCheckRefusesInOrderAndNamesTheOperation(t *testing.T) {
	var nilCtx context.Context
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	unusable := fmt.Errorf("%w: not made by New", store.ErrNilArgument)
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		usable error
		job    string
		want   error
	}{
		{"usable", context.Background(), nil, "job", nil},
		{"unusable first", nilCtx, unusable, "", store.ErrNilArgument},
		{"nil ctx before the name", nilCtx, nil, "", store.ErrNilArgument},
		{"ended ctx before the name", ended, nil, "", context.Canceled},
		{"bad name", context.Background(), nil, "", store.ErrInvalidName},
	} {
		err := Check(tt.ctx, "pkg", "Op", tt.job, tt.usable, store.ValidateName)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: Check = %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) || !strings.HasPrefix(err.Error(), "pkg: Op") {
			t.Errorf("%s: Check = %v, want an error starting with %q wrapping %v", tt.name, err, "pkg: Op", tt.want)
		}
		if tt.usable != nil && !errors.Is(err, tt.usable) {
			t.Errorf("%s: Check = %v, want it to wrap %v", tt.name, err, tt.usable)
		}
	}
}

func TestCorruptWrapsErrCorruptRecordOnce(t *testing.T) {
	for _, err := range []error{errors.New("bad"), fmt.Errorf("%w: bad", store.ErrCorruptRecord)} {
		got := Corrupt("pkg", "job", err)
		if !errors.Is(got, store.ErrCorruptRecord) || !errors.Is(got, err) || strings.Count(got.Error(), store.ErrCorruptRecord.Error()) != 1 {
			t.Errorf("Corrupt(%v) = %v, want it once wrapped in ErrCorruptRecord", err, got)
		}
	}
}

func TestTimesRoundTripAndRefuseOutOfRange(t *testing.T) {
	now := time.Now()
	for _, tt := range []time.Time{{}, now, now.In(time.FixedZone("x", 3600)), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)} {
		s, err := FormatTime(tt)
		if err != nil {
			t.Fatalf("FormatTime(%v): %v", tt, err)
		}
		got, err := ParseTime(s)
		if err != nil || !got.Equal(StoredTime(tt)) || got != StoredTime(tt) {
			t.Errorf("ParseTime(FormatTime(%v)) = %v, %v; want StoredTime %v", tt, got, err, StoredTime(tt))
		}
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Error("ParseTime accepted yesterday")
	}
	for _, r := range []lease.Record[int]{{AcquiredAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, {RenewedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}} {
		if _, _, err := FormatTimes(r); !errors.Is(err, store.ErrInvalidRecord) {
			t.Errorf("FormatTimes(%v) = %v, want ErrInvalidRecord", r, err)
		}
	}
}

// CheckList takes any prefix, the empty one included, and refuses an
// unusable store and a nil or ended ctx as Check does.
func TestCheckListTakesAnyPrefix(t *testing.T) {
	for _, prefix := range []string{"", "\x00", "a%_*?["} {
		if err := CheckList(context.Background(), "pkg", prefix, nil); err != nil {
			t.Errorf("CheckList(%q) = %v", prefix, err)
		}
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := CheckList(ended, "pkg", "", nil); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "pkg: List") {
		t.Errorf("CheckList with an ended ctx = %v", err)
	}
	var nilCtx context.Context
	if err := CheckList(nilCtx, "pkg", "", nil); !errors.Is(err, store.ErrNilArgument) {
		t.Errorf("CheckList with a nil ctx = %v", err)
	}
	if err := CheckList(context.Background(), "pkg", "", store.ErrNilArgument); !errors.Is(err, store.ErrNilArgument) {
		t.Errorf("CheckList of an unusable store = %v", err)
	}
}
