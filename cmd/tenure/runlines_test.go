package main

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/storeurl"
)

// Without -v, sayLeaders tells only this process's own claim: who leads
// elsewhere, a release and another process's claim stay quiet.
func TestQuietRunSaysOnlyItsOwnClaim(t *testing.T) {
	rec := lease.Record[rawMeta]{Holder: "b", Token: 9, LeaseDuration: 15 * time.Second, Claim: true}
	leaders := claimThenTerm(
		lead.Leader[rawMeta]{Present: true},
		lead.Leader[rawMeta]{Holder: "b", Token: 9, Present: true, Record: rec, Self: true, Claim: true})
	var out strings.Builder
	sayLeaders(leaders, "b", "job", false, &out)
	want := `tenure run: b claims "job" (token 9): the store may have lost a record whose holder could still lead, so b leads in 15s, with a new token, unless another process takes the lease first` + "\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

// runOnce runs "tenure run" in this process, with fastEnv's timings, for
// one term whose command exits at once with status 4, and returns what it
// printed. flags come before the election's name, "job".
func runOnce(t *testing.T, flags ...string) string {
	t.Helper()
	fastEnv(t)
	r := listen(t)
	t.Setenv("TENURE_TEST_CHILD", r.sock)
	t.Setenv("TENURE_TEST_CHILD_EXIT", "1")
	self, _ := os.Executable()
	code, out := inProcess(context.Background(), &storeurl.Opener{}, append(append([]string{"run"}, flags...), "job", "--", self)...)
	if code != 4 {
		t.Fatalf("exit %d, want 4:\n%s", code, out)
	}
	r.next(t, time.Second)
	return out.String()
}

// On a store that may lose records (Redis), the first holder's claim is
// told without -v, with how long it waits, before its term starts.
func TestRunSaysItsClaimWithoutVerbose(t *testing.T) {
	// A key prefix of its own on the package's shared server: the record
	// of "job" is new.
	prefix := "claim-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	url := "unix://" + testcluster.PackageRedis(t).Addr() + "?prefix=" + prefix
	text := runOnce(t, "--store", url, "--identity", "cli-a", "--grace", "100ms")
	claim := strings.Index(text, `tenure run: cli-a claims "job" (token `)
	leads := strings.Index(text, "tenure run: cli-a leads")
	if claim < 0 || leads < claim || !strings.Contains(text[claim:leads], "so cli-a leads in 2s, with a new token") {
		t.Errorf("no claim line with its wait before the term's line:\n%s", text)
	}
}

// Without -v, the election's warnings read as tenure run's own lines, with
// their attributes in parentheses and no time or level= field, and the
// misspelt variable's near match is suggested.
func TestQuietRunWarningsAreItsOwnLines(t *testing.T) {
	t.Setenv("TENURE_LEASE_DURATIN", "5s")
	out := runOnce(t, "--store", "memory://lines", "--identity", "cli-a", "--grace", "100ms")
	var warned bool
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "tenure run: ") || strings.Contains(line, "level=") || strings.Contains(line, "time=") {
			t.Errorf("line not in tenure run's style: %q", line)
		}
		if strings.HasPrefix(line, "tenure run: warning: the environment sets a TENURE_ variable that Tenure does not read") {
			warned = true
			for _, want := range []string{" (name=job identity=cli-a variable=TENURE_LEASE_DURATIN ", " did_you_mean=TENURE_LEASE_DURATION)"} {
				if !strings.Contains(line, want) {
					t.Errorf("warning %q does not say %q", line, want)
				}
			}
		}
	}
	if !warned {
		t.Errorf("no warning about TENURE_LEASE_DURATIN:\n%s", out)
	}
}

// lineHandler prints the level as a word, the message, and the attributes
// (with those of With and WithGroup) as slog's text handler quotes them.
func TestLineHandlerPrintsLevelMessageAndQuotedAttributes(t *testing.T) {
	var out strings.Builder
	log := slog.New(newLineHandler(&out, "tenure run", slog.LevelWarn)).With("name", "job")
	log.Info("dropped")
	log.Warn("store slow", "op", "get", "took", 2*time.Second)
	log.WithGroup("store").Error("failed", "err", "dial tcp: refused")
	log.Warn("bare")
	log.Warn("two\nlines", "holder", "x\ny")
	slog.New(newLineHandler(&out, "tenure run", slog.LevelWarn)).Warn("no attributes")
	want := `tenure run: warning: store slow (name=job op=get took=2s)
tenure run: error: failed (name=job store.err="dial tcp: refused")
tenure run: warning: bare (name=job)
tenure run: warning: "two\nlines" (name=job holder="x\ny")
tenure run: warning: no attributes
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
