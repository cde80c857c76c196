package gocron_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store/memstore"

	example "github.com/tenure-go/tenure/examples/gocron"
)

// At 02:00 only the leader's scheduler runs the report, with the term's
// token.
func TestNightlyRunsOnTheLeaderOnly(t *testing.T) {
	ctx := t.Context()
	st := memstore.New[struct{}]()
	start := time.Date(2026, 3, 1, 1, 59, 0, 0, time.UTC)
	type replica struct {
		e       *lead.Elector[struct{}]
		clock   *clockwork.FakeClock
		reports chan fence.Token
		jobs    monitor
	}
	var rs []*replica
	started := make(chan int, 4)
	for i, id := range []string{"a", "b"} {
		e, err := lead.New("nightly", st, lead.WithIdentity(id), lead.WithLookupEnv(nil),
			lead.WithObserver(func(c lead.Change) {
				if c.Kind == lead.Started {
					started <- i
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		go e.Run(runCtx)
		t.Cleanup(func() { stop(); <-e.Done() })
		r := &replica{e: e, clock: clockwork.NewFakeClockAt(start), reports: make(chan fence.Token, 10), jobs: make(monitor, 10)}
		s, err := example.Nightly(e, func(ctx context.Context) error {
			tok, _ := fence.FromContext(ctx)
			r.reports <- tok
			return nil
		}, gocron.WithClock(r.clock), gocron.WithLocation(time.UTC), gocron.WithMonitor(r.jobs))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Shutdown() })
		rs = append(rs, r)
	}
	leader := <-started // the first Run to reach the store
	term, ok := rs[leader].e.Term()
	if !ok {
		t.Fatal("the elector that started a term does not lead")
	}
	for _, r := range rs {
		if err := r.clock.BlockUntilContext(ctx, 1); err != nil { // the job's timer is set
			t.Fatal(err)
		}
		r.clock.Advance(time.Minute)
	}
	select {
	case tok := <-rs[leader].reports:
		if tok != term.Token {
			t.Errorf("the report ran with token %d, want the term's %d", tok, term.Token)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader's report did not run at 02:00")
	}
	if status := <-rs[leader].jobs; status != gocron.Success {
		t.Errorf("the leader's job ended %s, want success", status)
	}
	follower := rs[1-leader]
	if status := <-follower.jobs; status != gocron.Skip {
		t.Errorf("the follower's job ended %s, want skip (the Gate said no)", status)
	}
	select {
	case tok := <-follower.reports:
		t.Errorf("the follower's report ran, with token %d", tok)
	default:
	}
}

// monitor receives the status of every run of a job, as gocron reports it.
type monitor chan gocron.JobStatus

func (m monitor) IncrementJob(_ uuid.UUID, _ string, _ []string, status gocron.JobStatus) {
	m <- status
}
func (m monitor) RecordJobTiming(time.Time, time.Time, uuid.UUID, string, []string) {}

// docs/guide.md shows the body of Nightly as it is.
func TestGuideShowsNightly(t *testing.T) {
	src, err := os.ReadFile("nightly.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "\t// guide:begin\n")
	body, _, _ = strings.Cut(body, "\t// guide:end\n")
	var lines []string
	for _, l := range strings.SplitAfter(body, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	snippet := "```go\n" + strings.Join(lines, "") + "```\n"
	guide, err := os.ReadFile("../../docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	if body == "" || !strings.Contains(string(guide), snippet) {
		t.Errorf("docs/guide.md does not show Nightly's body as it is:\n%s", snippet)
	}
}
