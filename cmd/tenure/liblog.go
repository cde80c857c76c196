package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
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

// lineHandler prints each record as a line in a command's own style,
// "tenure run: warning: MESSAGE (key=value ...)": the level as a word
// (none for Info), the message (quoted if it is not printable, a line
// break say), then the attributes as slog's text handler writes them,
// without the time. tenure run uses it without -v, where only
// warnings and errors are shown, so that they read as its own lines.
type lineHandler struct {
	prefix string       // "tenure run"
	level  slog.Leveler // the lowest level printed
	out    *lineOutput
	attrs  slog.Handler // a text handler writing the attributes to out.buf
}

// lineOutput is what the lineHandlers of one logger share: the writer, and
// the buffer their text handler writes the attributes to.
type lineOutput struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

// newLineHandler returns a lineHandler printing to w the records at level
// and above, each line starting with prefix.
func newLineHandler(w io.Writer, prefix string, level slog.Leveler) *lineHandler {
	out := &lineOutput{w: w}
	attrs := slog.NewTextHandler(&out.buf, &slog.HandlerOptions{
		Level: slog.LevelDebug, // lineHandler filters
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	return &lineHandler{prefix: prefix, level: level, out: out, attrs: attrs}
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *lineHandler) Handle(ctx context.Context, r slog.Record) error {
	var word string
	switch {
	case r.Level >= slog.LevelError:
		word = "error: "
	case r.Level >= slog.LevelWarn:
		word = "warning: "
	case r.Level < slog.LevelInfo:
		word = "debug: "
	}
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.buf.Reset()
	if err := h.attrs.Handle(ctx, r); err != nil {
		return err
	}
	line := h.prefix + ": " + word + printable(r.Message) // one line, whatever a library says
	if attrs := strings.TrimSpace(h.out.buf.String()); attrs != "" {
		line += " (" + attrs + ")"
	}
	_, err := io.WriteString(h.out.w, line+"\n")
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithAttrs(as)
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.attrs = h.attrs.WithGroup(name)
	return &c
}
