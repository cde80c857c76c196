package health

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
)

// ErrNilArgument is what the handler of a nil Source reports (see
// Handler).
var ErrNilArgument = errors.New("health: nil argument")

// Source is what the handler inspects; *lead.Elector[M] is one.
type Source interface {
	Name() string
	Status() lead.Status
	Config() lease.Config
}

// Option configures Handler.
type Option func(*handler)

// WithClock sets the clock (default time.Now). It must agree with the
// elector's clock. A nil now keeps the default.
func WithClock(now func() time.Time) Option {
	return func(h *handler) {
		if now != nil {
			h.now = now
		}
	}
}

type handler struct {
	src   Source
	slack time.Duration
	now   func() time.Time
}

// Handler returns an http.Handler that answers 200 when src is healthy and
// 503 when it is a stuck leader: it has an open term and its last successful
// renewal was sent more than RenewDeadline+slack ago. The body is one line
// of text saying why.
//
// A nil src (a nil *lead.Elector too) cannot be inspected: the handler then
// answers 500 with a body that names it and ErrNilArgument, so that the
// mistake shows at the first probe instead of as a panic. Nil options are
// skipped.
func Handler(src Source, slack time.Duration, opts ...Option) http.Handler {
	h := &handler{src: src, slack: slack, now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(h)
		}
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if w == nil {
		return
	}
	if nilarg.IsNil(h.src) {
		http.Error(w, fmt.Sprintf("%v: Handler: src is nil", ErrNilArgument), http.StatusInternalServerError)
		return
	}
	st := h.src.Status()
	limit := h.src.Config().RenewDeadline + h.slack
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	name := h.src.Name()
	if !st.InTerm && st.Claim {
		fmt.Fprintf(w, "ok: %q not leading (%v): it holds a claim, which it takes over at %s\n",
			name, st.State, st.ClaimEnds.UTC().Format(time.RFC3339Nano))
		return
	}
	if !st.InTerm {
		fmt.Fprintf(w, "ok: %q not leading (%v)\n", name, st.State)
		return
	}
	since := h.now().Sub(st.LastRenewal)
	if since > limit {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "unhealthy: %q believes it leads (token %d) but last renewed %v ago, more than renew deadline + slack (%v)\n",
			name, st.Term.Token, since.Round(time.Millisecond), limit)
		return
	}
	fmt.Fprintf(w, "ok: %q leading (token %d), last renewed %v ago\n", name, st.Term.Token, since.Round(time.Millisecond))
}
