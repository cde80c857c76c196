package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/redisfence"
)

// A nil ctx or client, typed nil included, is an error wrapping
// fence.ErrNilArgument that names it; nothing panics. No server is needed.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilClient *redis.Client
	ctx := fence.WithToken(context.Background(), 1)
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never reached
	defer c.Close()
	tests := []struct {
		name    string
		f       func() error
		mention string
	}{
		{"Set: nil ctx", func() error { return redisfence.Set(nilCtx, c, 1, "k", "v", 0) }, "ctx is nil"},
		{"Set: nil client", func() error { return redisfence.Set(ctx, nil, 1, "k", "v", 0) }, "c is nil"},
		{"Set: typed nil client", func() error { return redisfence.Set(ctx, nilClient, 1, "k", "v", time.Second) }, "c is nil"},
		{"SetContext: nil ctx", func() error { return redisfence.SetContext(nilCtx, c, "k", "v", 0) }, "ctx is nil"},
		{"SetContext: typed nil client", func() error { return redisfence.SetContext(ctx, nilClient, "k", "v", 0) }, "c is nil"},
		{"Highest: nil ctx", func() error { _, err := redisfence.Highest(nilCtx, c, "k"); return err }, "ctx is nil"},
		{"Highest: nil client", func() error { _, err := redisfence.Highest(ctx, nil, "k"); return err }, "c is nil"},
		{"Highest: typed nil client", func() error { _, err := redisfence.Highest(ctx, nilClient, "k"); return err }, "c is nil"},
		{"Set: zero client", func() error { return redisfence.Set(ctx, &redis.Client{}, 1, "k", "v", 0) }, "c (*redis.Client) was not made by its constructor"},
		{"Set: zero cluster client", func() error { return redisfence.Set(ctx, &redis.ClusterClient{}, 1, "k", "v", 0) }, "c (*redis.ClusterClient) was not made by its constructor"},
		{"Highest: zero client", func() error { _, err := redisfence.Highest(ctx, &redis.Client{}, "k"); return err }, "was not made by its constructor"},
	}
	for _, tt := range tests {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return tt.f()
		}()
		if !errors.Is(err, fence.ErrNilArgument) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("%s = %v; want fence.ErrNilArgument naming %q", tt.name, err, tt.mention)
		}
	}
}
