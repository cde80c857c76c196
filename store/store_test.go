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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
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
