package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/health"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store/memstore"
)

// fixed is a Source with a given status.
type fixed struct{ st lead.Status }

func (f fixed) Name() string         { return "job" }
func (f fixed) Status() lead.Status  { return f.st }
func (f fixed) Config() lease.Config { return lease.DefaultConfig() } // RenewDeadline 10s

func get(h http.Handler) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	return rec.Code, rec.Body.String()
}

func TestHandlerAnswersEachStateWithItsCode(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := health.WithClock(func() time.Time { return now })
	tests := []struct {
		name    string
		st      lead.Status
		code    int
		mention string
	}{
		{"follower", lead.Status{State: fsm.Follower}, 200, "not leading (Follower)"},
		{"candidate", lead.Status{State: fsm.Candidate}, 200, "not leading"},
		{"claimer", lead.Status{State: fsm.Follower, Claim: true, ClaimEnds: now.Add(15 * time.Second)}, 200,
			"not leading (Follower): it holds a claim, which it takes over at 2026-11-29T12:00:15Z"},
		{"fresh leader", lead.Status{State: fsm.Leader, InTerm: true, Leading: true, LastRenewal: now.Add(-2 * time.Second)}, 200, "last renewed 2s ago"},
		{"leader at the limit", lead.Status{State: fsm.Leader, InTerm: true, LastRenewal: now.Add(-15 * time.Second)}, 200, "leading"},
		{"stuck leader", lead.Status{State: fsm.Leader, InTerm: true, Term: lead.Term{Token: 7}, LastRenewal: now.Add(-15*time.Second - time.Millisecond)}, 503, "token 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(health.Handler(fixed{tt.st}, 5*time.Second, clock))
			if code != tt.code || !strings.Contains(body, tt.mention) {
				t.Fatalf("got %d %q; want %d mentioning %q", code, body, tt.code, tt.mention)
			}
		})
	}
}

// A real elector is healthy while it leads and renews, and while it follows.
func TestHandlerOnElector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := lead.New("job", memstore.New[struct{}](), lead.WithIdentity("a"), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		h := health.Handler(e, time.Second)
		if code, body := get(h); code != 200 || !strings.Contains(body, "not leading") {
			t.Fatalf("before Run: %d %q", code, body)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go e.Run(ctx)
		_ = e.Lead(ctx, func(context.Context, lead.Term) error { return nil })
		time.Sleep(30 * time.Second)
		if code, body := get(h); code != 200 || !strings.Contains(body, "leading (token 1)") {
			t.Fatalf("leading: %d %q", code, body)
		}
		cancel()
		<-e.Done()
		if code, _ := get(h); code != 200 {
			t.Fatalf("after stop: %d", code)
		}
	})
}
