package health_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/fsm"
	"github.com/tenure-go/tenure/health"
	"github.com/tenure-go/tenure/lead"
)

// A nil Source (a nil *lead.Elector too) answers 500 naming it and
// ErrNilArgument; nil options and a nil clock keep the defaults; nothing
// panics.
func TestNilArguments(t *testing.T) {
	var nilE *lead.Elector[struct{}]
	tests := []struct {
		name string
		h    func() http.Handler
		code int
		body string
	}{
		{"nil src", func() http.Handler { return health.Handler(nil, time.Second) }, 500, health.ErrNilArgument.Error() + ": Handler: src is nil"},
		{"typed nil src", func() http.Handler { return health.Handler(nilE, time.Second) }, 500, "src is nil"},
		{"nil option", func() http.Handler { return health.Handler(fixed{lead.Status{State: fsm.Follower}}, time.Second, nil) }, 200, "not leading"},
		{"nil clock", func() http.Handler {
			return health.Handler(fixed{lead.Status{State: fsm.Follower}}, time.Second, health.WithClock(nil))
		}, 200, "not leading"},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", tt.name, p)
				}
			}()
			code, body := get(tt.h())
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("%s: %d %q; want %d mentioning %q", tt.name, code, body, tt.code, tt.body)
			}
			tt.h().ServeHTTP(nil, httptest.NewRequest("GET", "/", nil)) // a nil writer: nothing to answer
		}()
	}
}
