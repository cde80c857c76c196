package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
)

func TestValidateStored(t *testing.T) {
	ok := lease.Record[string]{Holder: "a", Token: 3, Transitions: 2, LeaseDuration: time.Second}
	tests := []struct {
		name   string
		edit   func(*lease.Record[string])
		substr string // "" means valid
	}{
		{"held", func(*lease.Record[string]) {}, ""},
		{"released, zero duration", func(r *lease.Record[string]) { r.Holder, r.LeaseDuration = "", 0 }, ""},
		{"at the bounds", func(r *lease.Record[string]) {
			r.Token, r.Transitions, r.LeaseDuration = lease.MaxToken, lease.MaxToken, lease.MaxDuration
		}, ""},
		{"held, zero duration", func(r *lease.Record[string]) { r.LeaseDuration = 0 }, "LeaseDuration is 0"},
		{"negative duration", func(r *lease.Record[string]) { r.LeaseDuration = -1 }, "LeaseDuration"},
		{"duration past the bound", func(r *lease.Record[string]) { r.LeaseDuration = lease.MaxDuration + 1 }, "LeaseDuration"},
		{"max int64 duration", func(r *lease.Record[string]) { r.LeaseDuration = 1<<63 - 1 }, "LeaseDuration"},
		{"token past the bound", func(r *lease.Record[string]) { r.Token = lease.MaxToken + 1 }, "token"},
		{"token 2^64-1", func(r *lease.Record[string]) { r.Token = 1<<64 - 1 }, "token"},
		{"transitions past the bound", func(r *lease.Record[string]) { r.Transitions = 1<<64 - 1 }, "Transitions"},
		{"control character in holder", func(r *lease.Record[string]) { r.Holder = "a\x1b[2J" }, "holder"},
		{"holder too long", func(r *lease.Record[string]) { r.Holder = strings.Repeat("h", store.MaxHolderBytes+1) }, "holder"},
		{"released, naming a successor", func(r *lease.Record[string]) { r.Holder, r.Successor = "", "b" }, ""},
		{"held, naming a successor", func(r *lease.Record[string]) { r.Successor = "b" }, "only a released record names a successor"},
		{"control character in successor", func(r *lease.Record[string]) { r.Holder, r.Successor = "", "b\x00" }, "successor"},
		{"successor too long", func(r *lease.Record[string]) {
			r.Holder, r.Successor = "", strings.Repeat("s", store.MaxHolderBytes+1)
		}, "successor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			if err := store.ValidateRecord(r); (err == nil) != (tt.substr == "") || err != nil && !errors.Is(err, store.ErrInvalidRecord) && !errors.Is(err, store.ErrTokenExhausted) {
				t.Errorf("ValidateRecord(%+v) = %v; want it to accept what ValidateStored accepts", r, err)
			}
			err := store.ValidateStored(r)
			if tt.substr == "" {
				if err != nil {
					t.Fatalf("ValidateStored(%+v) = %v, want nil", r, err)
				}
				return
			}
			if !errors.Is(err, store.ErrCorruptRecord) || !strings.Contains(err.Error(), tt.substr) {
				t.Fatalf("ValidateStored(%+v) = %v, want ErrCorruptRecord naming %q", r, err, tt.substr)
			}
		})
	}
}

func TestValidateRecordBounds(t *testing.T) {
	base := lease.Record[string]{Holder: "a", Token: 1, LeaseDuration: time.Second}
	tests := []struct {
		name string
		edit func(*lease.Record[string])
		want error
	}{
		{"valid", func(*lease.Record[string]) {}, nil},
		{"largest token", func(r *lease.Record[string]) { r.Token = lease.MaxToken }, nil},
		{"token past the bound", func(r *lease.Record[string]) { r.Token = lease.MaxToken + 1 }, store.ErrTokenExhausted},
		{"duration past the bound", func(r *lease.Record[string]) { r.LeaseDuration = lease.MaxDuration + 1 }, store.ErrInvalidRecord},
		{"transitions past the bound", func(r *lease.Record[string]) { r.Transitions = lease.MaxToken + 1 }, store.ErrInvalidRecord},
		{"negative duration", func(r *lease.Record[string]) { r.LeaseDuration = -time.Second }, store.ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.edit(&r)
			err := store.ValidateRecord(r)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("ValidateRecord = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestValidateRecordHeldNeedsDuration(t *testing.T) {
	r := lease.Record[string]{Holder: "a", Token: 1}
	if err := store.ValidateRecord(r); !errors.Is(err, store.ErrInvalidRecord) || !strings.Contains(err.Error(), "LeaseDuration is 0") {
		t.Errorf("ValidateRecord(held, LeaseDuration 0) = %v, want ErrInvalidRecord naming LeaseDuration", err)
	}
	r.Holder = ""
	if err := store.ValidateRecord(r); err != nil {
		t.Errorf("ValidateRecord(released, LeaseDuration 0) = %v, want nil", err)
	}
}

// Whatever ValidateRecord accepts, ValidateStored accepts: a store never
// writes a record it would then report as corrupt.
func TestValidateRecordImpliesStored(t *testing.T) {
	for _, r := range []lease.Record[string]{
		{},
		{Holder: "a", LeaseDuration: 1},
		{Holder: "a", Token: lease.MaxToken, Transitions: lease.MaxToken, LeaseDuration: lease.MaxDuration},
		{Token: lease.MaxToken},
	} {
		if err := store.ValidateRecord(r); err != nil {
			t.Fatalf("ValidateRecord(%+v) = %v", r, err)
		}
		if err := store.ValidateStored(r); err != nil {
			t.Errorf("ValidateStored(%+v) = %v after ValidateRecord accepted it", r, err)
		}
	}
}

func TestRenewsOnlySameHolderAndToken(t *testing.T) {
	cur := lease.Record[string]{Holder: "a", Token: 7}
	released := lease.Record[string]{Token: 7}
	tests := []struct {
		name      string
		cur, next lease.Record[string]
		want      bool
	}{
		{"renewal", cur, lease.Record[string]{Holder: "a", Token: 7}, true},
		{"release", cur, lease.Record[string]{Token: 7}, true},
		{"rewrite of a released record", released, lease.Record[string]{Token: 7}, true},
		{"new token", cur, lease.Record[string]{Holder: "a", Token: 8}, false},
		{"lower token", cur, lease.Record[string]{Holder: "a", Token: 6}, false},
		{"another holder, same token", cur, lease.Record[string]{Holder: "b", Token: 7}, false},
		{"acquire of a released record, same token", released, lease.Record[string]{Holder: "b", Token: 7}, false},
	}
	for _, tt := range tests {
		if got := store.Renews(tt.cur, tt.next); got != tt.want {
			t.Errorf("%s: Renews = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNewToken(t *testing.T) {
	tests := []struct {
		proposed, floor uint64
		want            uint64 // 0: ErrTokenExhausted
	}{
		{0, 0, 1},
		{5, 0, 5},
		{5, 9, 10},
		{10, 9, 10},
		{0, 1<<64 - 1, 0},      // a floor beyond the bound
		{0, lease.MaxToken, 0}, // the proposal wrapped around
		{lease.MaxToken, lease.MaxToken - 1, lease.MaxToken},
		{lease.MaxToken + 1, 0, 0},
		{1<<64 - 1, 3, 0},
		{3, lease.MaxToken - 1, lease.MaxToken},
	}
	for _, tt := range tests {
		got, err := store.NewToken(tt.proposed, tt.floor)
		if tt.want == 0 {
			if !errors.Is(err, store.ErrTokenExhausted) || got != 0 {
				t.Errorf("NewToken(%d, %d) = %d, %v; want ErrTokenExhausted", tt.proposed, tt.floor, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NewToken(%d, %d) = %d, %v; want %d", tt.proposed, tt.floor, got, err, tt.want)
		}
	}
}
