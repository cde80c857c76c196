package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tenure-go/tenure/internal/nilarg"
	"github.com/tenure-go/tenure/store"
)

// Errors returned by this package.
var (
	// ErrConfig: a Config field breaks its rule; the error names it.
	ErrConfig = errors.New("ui: invalid config")
	// ErrCannotList: the store cannot list its records and Config.Names
	// names none. It wraps store.ErrListUnsupported.
	ErrCannotList = fmt.Errorf("ui: the store cannot list its records: %w", store.ErrListUnsupported)
)

// Defaults of Config's fields.
const (
	DefaultInterval         = 2 * time.Second
	DefaultHistory          = 20
	DefaultMaxNames         = 10000
	DefaultMaxWatches       = 256
	DefaultMaxMetadataBytes = 1024
	// maxErrorBytes bounds the text of a record's error kept per name.
	maxErrorBytes = 512
	// maxRemoved bounds the removals kept for pages that follow the
	// events; a page further behind is sent every row again.
	maxRemoved = 1024
	// maxStreams bounds the pages following the events at once.
	maxStreams = 64
	// keepAlive is the time between comments sent to a quiet page, so
	// that proxies keep the stream open and a gone page is noticed.
	keepAlive = 15 * time.Second
)

// Config says what a Server shows and how it bounds its work. The zero
// value shows every record, with the defaults above.
type Config struct {
	// Prefix selects the names listed: those that start with it.
	Prefix string
	// Names, when set, are the names shown: the Server reads them instead
	// of listing (for a store that cannot list), and Prefix must be empty.
	Names []string
	// Interval is the time between listings (or reads of Names), which
	// find new names and are the only updates a store that cannot watch
	// gets. Default DefaultInterval.
	Interval time.Duration
	// History is the number of handovers kept per name. Default
	// DefaultHistory.
	History int
	// MaxNames is the most names shown; a listing is cut there (in name
	// order) and the page says so. Default DefaultMaxNames.
	MaxNames int
	// MaxWatches is the most names watched at once; the others are
	// updated by the listing. Default DefaultMaxWatches.
	MaxWatches int
	// MaxMetadataBytes is the most bytes of a record's metadata (as JSON)
	// kept and shown; longer metadata is cut and marked. Default
	// DefaultMaxMetadataBytes.
	MaxMetadataBytes int
	// Hosts are host names, other than IP addresses and localhost, that
	// requests may be addressed to (a name the server is reached by).
	Hosts []string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger logs failures to list and watch. Default: discard.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults, or an
// error naming a field that breaks its rule.
func (c Config) withDefaults() (Config, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Interval", int64(c.Interval)}, {"History", int64(c.History)}, {"MaxNames", int64(c.MaxNames)},
		{"MaxWatches", int64(c.MaxWatches)}, {"MaxMetadataBytes", int64(c.MaxMetadataBytes)},
	} {
		if f.v < 0 {
			return c, fmt.Errorf("%w: %s is %d, must be >= 0 (0 for the default)", ErrConfig, f.name, f.v)
		}
	}
	if len(c.Names) > 0 && c.Prefix != "" {
		return c, fmt.Errorf("%w: Prefix is %q and Names are set: give one or the other", ErrConfig, c.Prefix)
	}
	for i, n := range c.Names {
		if err := store.ValidateName(n); err != nil {
			return c, fmt.Errorf("%w: Names[%d]: %w", ErrConfig, i, err)
		}
	}
	c.Names = slices.Compact(slices.Sorted(slices.Values(c.Names)))
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.History == 0 {
		c.History = DefaultHistory
	}
	if c.MaxNames == 0 {
		c.MaxNames = DefaultMaxNames
	}
	if c.MaxWatches == 0 {
		c.MaxWatches = DefaultMaxWatches
	}
	if c.MaxMetadataBytes == 0 {
		c.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	if len(c.Names) > c.MaxNames {
		return c, fmt.Errorf("%w: %d Names, more than MaxNames (%d)", ErrConfig, len(c.Names), c.MaxNames)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// Server keeps the state of a store's records and serves the page that
// shows it. Run keeps the state; the Server is an http.Handler that
// serves it. Its methods are safe for concurrent use.
type Server[M any] struct {
	st     store.Store[M]
	lister store.Lister[M]
	cfg    Config
	state  *state
	done   chan struct{} // closed when Run returns

	mu       sync.Mutex
	watching map[string]context.CancelFunc
	noWatch  bool            // the store cannot watch
	toRead   map[string]bool // names to read after an event that is only a hint
	wake     chan struct{}   // wakes the reader; capacity 1
	// authentic: the store's watch events show records as stored
	// (store.WatchCapabilities), and are shown as they come.
	authentic bool
	running   bool
	mux       *http.ServeMux
	streams   chan struct{} // a token per page following the events
}

// New returns a Server showing st's records as cfg says. It returns an
// error wrapping ErrCannotList when st cannot list and cfg.Names is
// empty, ErrConfig for a bad cfg, and store.ErrNilArgument for a nil st.
func New[M any](st store.Store[M], cfg Config) (*Server[M], error) {
	if nilarg.IsNil(st) {
		return nil, fmt.Errorf("ui: New: %w: st is nil", store.ErrNilArgument)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server[M]{
		st: st, lister: store.ListerOf(st), cfg: cfg,
		state:    newState(cfg),
		done:     make(chan struct{}),
		watching: map[string]context.CancelFunc{},
		toRead:   map[string]bool{},
		streams:  make(chan struct{}, maxStreams),
		wake:     make(chan struct{}, 1),
		// A forged event could show a made-up record, or one with a
		// revision so high that no real one would replace it.
		authentic: store.WatchCapabilitiesOf(st).Authentic,
	}
	if s.lister == nil && len(cfg.Names) == 0 {
		return nil, fmt.Errorf("%w: %T does not implement store.Lister; name the elections to show (Config.Names, tenure ui -name)", ErrCannotList, st)
	}
	if _, ok := st.(store.Watcher[M]); !ok {
		s.noWatch = true
	}
	s.mux = s.routes()
	return s, nil
}

// Run keeps the Server's state until ctx ends: it lists (or reads) the
// records every Config.Interval and watches the names found. It returns
// nil when ctx ends, after its watches have stopped; pages following the
// events are then ended. Run may be called once.
func (s *Server[M]) Run(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("ui: Run: %w: ctx is nil", store.ErrNilArgument)
	}
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("ui: Run called twice")
	}
	s.running = true
	s.mu.Unlock()
	defer close(s.done)
	ctx, cancel := context.WithCancel(ctx)
	var reading sync.WaitGroup
	reading.Go(func() { s.reader(ctx) })
	defer func() {
		cancel()
		reading.Wait()
		s.mu.Lock()
		clear(s.watching)
		s.mu.Unlock()
	}()
	ticker := time.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	for {
		s.refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// refresh lists (or reads) the records once, then starts watches for the
// names that have none and stops those of names gone.
func (s *Server[M]) refresh(ctx context.Context) {
	if len(s.cfg.Names) > 0 {
		s.readNames(ctx)
	} else {
		s.list(ctx)
	}
	s.watch(ctx)
}

// list applies one listing.
func (s *Server[M]) list(ctx context.Context) {
	listed, err := s.lister.List(ctx, s.cfg.Prefix)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn("ui: list", "prefix", s.cfg.Prefix, "err", err)
			s.state.setError(fmt.Sprintf("listing failed: %v", err))
		}
		return
	}
	s.state.setError("")
	obs := make([]obs, len(listed))
	names := make([]string, len(listed))
	for i, l := range listed {
		names[i] = l.Name
		obs[i] = observe(store.Event[M]{Record: l.Record, Revision: l.Revision, Err: l.Err}, s.cfg.MaxMetadataBytes)
		obs[i].read = true
	}
	s.state.applyListing(obs, names, s.cfg.Now())
}

// readNames reads each of Config.Names.
func (s *Server[M]) readNames(ctx context.Context) {
	var failed error
	for _, name := range s.cfg.Names {
		if err := s.read(ctx, name); err != nil {
			if ctx.Err() != nil {
				return
			}
			failed = err
		}
	}
	if failed != nil {
		s.cfg.Logger.Warn("ui: read", "err", failed)
		s.state.setError(fmt.Sprintf("reading failed: %v", failed))
		return
	}
	s.state.setError("")
}

// read reads name and applies what it found. It returns the store's
// error when the read failed.
func (s *Server[M]) read(ctx context.Context, name string) error {
	rec, rev, err := s.st.Get(ctx, name)
	ev := store.Event[M]{Record: rec, Revision: rev}
	switch {
	case errors.Is(err, store.ErrNotFound):
		ev = store.Event[M]{Absent: true}
	case errors.Is(err, store.ErrCorruptRecord):
		ev = store.Event[M]{Revision: rev, Err: err}
	case err != nil:
		return fmt.Errorf("%q: %w", name, err)
	}
	o := observe(ev, s.cfg.MaxMetadataBytes)
	o.read = true
	s.state.apply(name, o, s.cfg.Now())
	return nil
}

// hint records that a watch event of a store whose events are not
// authentic (anyone who can publish on its channel can forge one) told
// of a change of name: the reader reads the record, and shows what it
// read rather than what the event said.
func (s *Server[M]) hint(name string) {
	s.mu.Lock()
	s.toRead[name] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// reader reads the names hinted at until ctx ends.
func (s *Server[M]) reader(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		names := slices.Sorted(maps.Keys(s.toRead))
		clear(s.toRead)
		s.mu.Unlock()
		for _, name := range names {
			if err := s.read(ctx, name); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("ui: read after a watch event", "err", err)
			}
		}
	}
}

// watch starts watches for shown names that have none, up to
// Config.MaxWatches, and stops the watches of names no longer shown.
func (s *Server[M]) watch(ctx context.Context) {
	names := s.state.names()
	var stop []context.CancelFunc
	s.mu.Lock()
	for name, ended := range s.watching {
		if _, ok := slices.BinarySearch(names, name); !ok {
			stop = append(stop, ended)
		}
	}
	s.mu.Unlock()
	for _, ended := range stop {
		ended() // takes s.mu
	}
	s.mu.Lock()
	if s.noWatch {
		s.mu.Unlock()
		return
	}
	var start []string
	for _, name := range names {
		if len(s.watching)+len(start) >= s.cfg.MaxWatches {
			break
		}
		if _, ok := s.watching[name]; !ok {
			start = append(start, name)
		}
	}
	s.mu.Unlock()
	for _, name := range start {
		wctx, cancel := context.WithCancel(ctx)
		var once sync.Once
		ended := func() {
			once.Do(func() {
				cancel()
				s.mu.Lock()
				delete(s.watching, name)
				s.mu.Unlock()
			})
		}
		s.mu.Lock()
		s.watching[name] = ended
		s.mu.Unlock()
		err := store.WatchFunc(wctx, s.st, name, func(ev store.Event[M], ok bool) {
			if !ok {
				// The watch broke or was stopped: the next refresh
				// starts it again if the name is still shown.
				ended()
				return
			}
			if s.authentic {
				s.state.apply(name, observe(ev, s.cfg.MaxMetadataBytes), s.cfg.Now())
				return
			}
			s.hint(name)
		})
		if err != nil {
			ended()
			if errors.Is(err, store.ErrWatchUnsupported) {
				s.mu.Lock()
				s.noWatch = true
				s.mu.Unlock()
				return
			}
			if ctx.Err() == nil {
				s.cfg.Logger.Warn("ui: watch", "name", name, "err", err)
			}
		}
	}
}

// watched returns the number of names being watched.
func (s *Server[M]) watched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watching)
}

// mode says how the shown records are kept current, for the page.
func (s *Server[M]) mode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.cfg.Names) > 0 && s.noWatch:
		return fmt.Sprintf("reading %d names every %v", len(s.cfg.Names), s.cfg.Interval)
	case s.noWatch:
		return fmt.Sprintf("listing every %v (the store does not watch)", s.cfg.Interval)
	case len(s.cfg.Names) > 0:
		return fmt.Sprintf("watching %d names, reading them every %v", len(s.watching), s.cfg.Interval)
	}
	return fmt.Sprintf("watching %d names, listing every %v", len(s.watching), s.cfg.Interval)
}

// Serve serves s on ln and runs s until ctx ends, then shuts the server
// down: pages following the events are ended and Serve returns nil once
// every request has. It returns the first error of serving otherwise.
func Serve[M any](ctx context.Context, ln net.Listener, s *Server[M]) error {
	if ctx == nil {
		return fmt.Errorf("ui: Serve: %w: ctx is nil", store.ErrNilArgument)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		cancel()
	}
	<-ran // s.done is closed: event streams end
	shut, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if serr := srv.Shutdown(shut); serr != nil && err == nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
