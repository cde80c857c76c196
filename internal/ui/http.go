package ui

import (
	"embed"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

//go:embed assets/index.html assets/app.js assets/app.css
var assets embed.FS

// throttle is the least time between two messages to one page.
const throttle = 200 * time.Millisecond

// csp lets the page load its own script and style and connect back to its
// own origin, and nothing else: no inline script, no other origin, no
// frame around it.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// routes returns the Server's handlers.
func (s *Server[M]) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", serveAsset("assets/index.html"))
	mux.HandleFunc("GET /app.js", serveAsset("assets/app.js"))
	mux.HandleFunc("GET /app.css", serveAsset("assets/app.css"))
	mux.HandleFunc("GET /api/state", s.serveState)
	mux.HandleFunc("GET /api/events", s.serveEvents)
	return mux
}

// serveAsset serves one embedded file.
func serveAsset(file string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile(file)
		if err != nil {
			http.Error(w, "missing asset", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType(file))
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(b)
	}
}

func contentType(file string) string {
	switch {
	case strings.HasSuffix(file, ".js"):
		return "text/javascript; charset=utf-8"
	case strings.HasSuffix(file, ".css"):
		return "text/css; charset=utf-8"
	}
	return "text/html; charset=utf-8"
}

// ServeHTTP serves the page (/, /app.js, /app.css), the state as JSON
// (/api/state) and its changes as server-sent events (/api/events). It
// answers GET and HEAD only, and refuses a request whose Host is neither
// an IP address, localhost nor one of Config.Hosts (421).
func (s *Server[M]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if !s.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("tenure ui: requests for host %q are refused: address the server by an IP address or localhost, or allow the name with -allow-host", r.Host), http.StatusMisdirectedRequest)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether a request addressed to hostport may be
// served: one for any other name may come from a page whose name was
// pointed at this server (DNS rebinding).
func (s *Server[M]) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") {
		return true
	}
	return slices.ContainsFunc(s.cfg.Hosts, func(h string) bool { return strings.EqualFold(h, host) })
}

// message is the whole state (reset) or what changed after seq, nil when
// nothing did, with the channel closed at the next change.
func (s *Server[M]) message(seq uint64, reset bool) (*Message, <-chan struct{}) {
	m, changed := s.state.since(seq, reset)
	if m != nil {
		m.Now = s.cfg.Now().UTC()
		m.Prefix = s.cfg.Prefix
		m.Mode = s.mode()
	}
	return m, changed
}

// serveState writes the whole state as JSON.
func (s *Server[M]) serveState(w http.ResponseWriter, r *http.Request) {
	m, _ := s.message(0, true)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// encoding/json escapes <, > and & in strings: the body holds no
	// markup whatever the records say.
	_ = json.NewEncoder(w).Encode(m)
}

// serveEvents follows the state: a "reset" event with every row, then an
// "update" event at each change (changes coming faster than every
// throttle are sent together), until the page goes or Run ends. At most
// maxStreams pages follow at once; more are refused (503).
func (s *Server[M]) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		http.Error(w, fmt.Sprintf("tenure ui: %d pages follow this server already, the most it serves", cap(s.streams)), http.StatusServiceUnavailable)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	keep := time.NewTicker(keepAlive)
	defer keep.Stop()
	var seq uint64
	reset := true
	for {
		m, changed := s.message(seq, reset)
		if m != nil {
			b, err := json.Marshal(m)
			if err != nil {
				return
			}
			kind := "update"
			if m.Reset {
				kind = "reset"
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b); err != nil {
				return
			}
			flusher.Flush()
			seq, reset = m.Seq, false
			// Let changes gather: one message per throttle at most.
			t := time.NewTimer(throttle)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-changed:
		}
	}
}
