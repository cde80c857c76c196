package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"k8s.io/klog/v2"
)

// Client libraries log on their own: go-redis prints lines such as "redis:
// connection pool: failed to dial" to stderr, and client-go logs through
// klog. tenure routes both into libraryLog, a slog logger that discards
// everything unless a command sets one: tenure run -v shows them with its
// own log. The settings are global to the process, so they are made here,
// in the command, never in Tenure's library packages.

// libraryLog is where client libraries' log lines go.
var libraryLog atomic.Pointer[slog.Logger]

func init() { libraryLog.Store(slog.New(slog.DiscardHandler)) }

// routeLibraryLogs sends go-redis's and klog's log lines to libraryLog.
func routeLibraryLogs() {
	redis.SetLogger(redisLog{})
	klog.SetSlogLogger(slog.New(libraryHandler{}).With("library", "client-go"))
}

// redisLog is go-redis's logger (its internal Logging interface): a line
// at level Info.
type redisLog struct{}

// Printf logs one line of go-redis.
func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	libraryLog.Load().Log(ctx, slog.LevelInfo, strings.TrimSpace(fmt.Sprintf(format, v...)), "library", "go-redis")
}

// libraryHandler passes records to libraryLog's handler as it is when they
// are logged.
type libraryHandler struct {
	with func(slog.Handler) slog.Handler // attributes and groups added
}

func (h libraryHandler) target() slog.Handler {
	t := libraryLog.Load().Handler()
	if h.with != nil {
		t = h.with(t)
	}
	return t
}

func (h libraryHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return libraryLog.Load().Handler().Enabled(ctx, l)
}

func (h libraryHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.target().Handle(ctx, r)
}

func (h libraryHandler) WithAttrs(as []slog.Attr) slog.Handler {
	prev := h.with
	return libraryHandler{with: func(t slog.Handler) slog.Handler {
		if prev != nil {
			t = prev(t)
		}
		return t.WithAttrs(as)
	}}
}

func (h libraryHandler) WithGroup(name string) slog.Handler {
	prev := h.with
	return libraryHandler{with: func(t slog.Handler) slog.Handler {
		if prev != nil {
			t = prev(t)
		}
		return t.WithGroup(name)
	}}
}
