package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/storeurl"
)

// notifyBuffer is a syncBuffer that tells waitFor of every write.
type notifyBuffer struct {
	syncBuffer
	wrote chan struct{}
}

func newNotifyBuffer() *notifyBuffer { return &notifyBuffer{wrote: make(chan struct{}, 1)} }

func (b *notifyBuffer) Write(p []byte) (int, error) {
	n, err := b.syncBuffer.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// waitFor waits until what b holds contains want, and fails t after within.
func (b *notifyBuffer) waitFor(t *testing.T, want string, within time.Duration) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for !strings.Contains(b.String(), want) {
		select {
		case <-b.wrote:
		case <-deadline.C:
			t.Fatalf("no %q within %v in:\n%s", want, within, b.String())
		}
	}
}

// inProcessSplit runs "tenure ARGS" in this process with stdout and stderr
// apart.
func inProcessSplit(ctx context.Context, o *storeurl.Opener, args ...string) (code int, stdout, stderr string) {
	var out, errOut syncBuffer
	code = run(context.WithValue(ctx, openerKey{}, o), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Flags may come after NAME, as in most command lines: get, watch and run
// read them in either order.
func TestFlagsBeforeOrAfterName(t *testing.T) {
	fastEnv(t)
	t.Setenv("TENURE_STORE", "")
	o := &storeurl.Opener{}
	r := listen(t)
	t.Setenv("TENURE_TEST_CHILD", r.sock)
	t.Setenv("TENURE_TEST_CHILD_EXIT", "1")
	self, _ := os.Executable()
	// Flags after NAME, and before --.
	if code, out := inProcess(context.Background(), o, "run", "job", "--store", "memory://order", "--identity", "solo", "--", self); code != 4 {
		t.Fatalf("tenure run job --store URL --identity solo -- CMD: exit %d:\n%s", code, out)
	}
	r.next(t, 10*time.Second)
	for _, args := range [][]string{
		{"get", "--store", "memory://order", "-o", "json", "job"},
		{"get", "job", "--store", "memory://order", "-o", "json"},
		{"get", "-o", "json", "job", "--store=memory://order"},
		{"get", "--store", "memory://order", "-o", "json", "--", "job"},
	} {
		code, stdout, stderr := inProcessSplit(context.Background(), o, args...)
		var rec recordJSON
		if err := json.Unmarshal([]byte(stdout), &rec); code != 0 || err != nil || rec.Holder != "" || rec.Token != 1 {
			t.Errorf("tenure %q: exit %d, stdout %q (%v), stderr %q; want the released record of token 1", args, code, stdout, err, stderr)
		}
	}
	// watch: a flag after NAME is read (and checked).
	code, out := inProcess(context.Background(), o, "watch", "job", "--store", "memory://order", "-interval", "0s")
	if code != 1 || !strings.Contains(out.String(), "-interval is 0s") {
		t.Errorf("tenure watch job --store URL -interval 0s: exit %d:\n%s", code, out)
	}
	// Two NAMEs are still refused, wherever the flags are.
	code, out = inProcess(context.Background(), o, "get", "a", "--store", "memory://order", "b")
	if code != 1 || !strings.Contains(out.String(), "want exactly one election NAME, got 2 arguments") {
		t.Errorf("tenure get a --store URL b: exit %d:\n%s", code, out)
	}
}

// parseArgs takes flags anywhere, a flag's value from the next argument
// unless it is a boolean flag or written -flag=value, and stops at "--"
// or, with a limit on positional arguments, at the first one too many or
// at an undefined flag after them.
func TestParseArgsTakesFlagsAnywhereUntilDashDash(t *testing.T) {
	tests := []struct {
		args           []string
		max            int
		positional     []string
		rest           []string
		dashDash       bool
		extra          bool
		store, grace   string
		verbose, fails bool
	}{
		{args: []string{"job", "--store", "s", "-v"}, max: -1, positional: []string{"job"}, store: "s", verbose: true},
		{args: []string{"-v", "job", "--grace=2s"}, max: -1, positional: []string{"job"}, grace: "2s", verbose: true},
		{args: []string{"a", "b", "--store", "s"}, max: -1, positional: []string{"a", "b"}, store: "s"},
		{args: []string{"job", "--", "--store", "s"}, max: 1, positional: []string{"job"}, rest: []string{"--store", "s"}, dashDash: true},
		{args: []string{"--store", "s", "job", "sh", "-c", "x"}, max: 1, positional: []string{"job"}, rest: []string{"sh", "-c", "x"}, extra: true, store: "s"},
		{args: []string{"job", "-c", "x"}, max: 1, positional: []string{"job"}, rest: []string{"-c", "x"}, extra: true},
		{args: []string{"job", "-c", "x"}, max: -1, fails: true}, // -c is not a flag of the set
		{args: []string{"--store", "--", "job"}, max: 1, positional: []string{"job"}, store: "--"},
		{args: []string{"job", "-v", "--", "ls", "-l"}, max: 1, positional: []string{"job"}, rest: []string{"ls", "-l"}, dashDash: true, verbose: true},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		store := fs.String("store", "", "")
		grace := fs.String("grace", "", "")
		verbose := fs.Bool("v", false, "")
		p, err := parseArgs(fs, tt.args, tt.max)
		if tt.fails {
			if err == nil {
				t.Errorf("parseArgs(%q, %d) = %+v, want an error", tt.args, tt.max, p)
			}
			continue
		}
		if err != nil || !slices.Equal(p.positional, tt.positional) || !slices.Equal(p.rest, tt.rest) || p.dashDash != tt.dashDash || p.extra != tt.extra ||
			*store != tt.store || *grace != tt.grace || *verbose != tt.verbose {
			t.Errorf("parseArgs(%q, %d) = %+v (%v), store %q grace %q v %v; want positional %q rest %q dashDash %v extra %v store %q grace %q v %v",
				tt.args, tt.max, p, err, *store, *grace, *verbose, tt.positional, tt.rest, tt.dashDash, tt.extra, tt.store, tt.grace, tt.verbose)
		}
	}
}

// tenure run without "--" before the command is refused before it takes
// part in the election, with the command line that says what was meant,
// secrets hidden.
func TestRunRequiresDashDash(t *testing.T) {
	t.Setenv("TENURE_STORE", "")
	o := &storeurl.Opener{}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--store", "memory://x", "job", "sh", "-c", "echo hi; exit 3"},
			`tenure run --store memory://x job -- sh -c 'echo hi; exit 3'`},
		{[]string{"run", "job", "true"}, `tenure run job -- true`},
		{[]string{"run", "--store", "memory://x", "job", "--grace", "1s", "ls", "-l"}, `tenure run --store memory://x job --grace 1s -- ls -l`},
		{[]string{"run", "--store", "memory://x", "job", "-c", "x"}, `tenure run --store memory://x job -- -c x`},
		{[]string{"run", "--store", "redis://u:hunter2@127.0.0.1:1/0", "job", "sh", "-c", "x"}, `tenure run --store redis://u:xxxxx@127.0.0.1:1/0 job -- sh -c x`},
		{[]string{"run", "--store", "redis://u:hun'ter2@h:1/0", "job", "true"}, `tenure run --store 'redis://u:xxxxx@h:1/0' job -- true`},
	}
	for _, tt := range tests {
		code, out := inProcess(context.Background(), o, tt.args...)
		text := out.String()
		if code != 1 || !strings.Contains(text, `the command must follow "--"`) || !strings.Contains(text, tt.want) {
			t.Errorf("tenure %q: exit %d:\n%s\nwant exit 1 saying the command must follow \"--\", with %s", tt.args, code, text, tt.want)
		}
		if strings.Contains(text, "hunter2") || strings.Contains(text, "hun'") || strings.Contains(text, "leads") {
			t.Errorf("tenure %q printed a secret or took part:\n%s", tt.args, text)
		}
	}
	// NAME alone: the message shows where the command goes.
	code, out := inProcess(context.Background(), o, "run", "--store", "memory://x", "job")
	if code != 1 || !strings.Contains(out.String(), "tenure run [flags] job -- COMMAND [ARGS...]") {
		t.Errorf("tenure run --store URL job: exit %d:\n%s", code, out)
	}
}

// tenure get -o json prints the same object for a missing record as
// tenure watch -o json, and exits 3 (in text mode too); 1 remains the
// status of a failure.
func TestGetAbsentRecord(t *testing.T) {
	t.Setenv("TENURE_STORE", "")
	o := &storeurl.Opener{}
	code, stdout, stderr := inProcessSplit(context.Background(), o, "get", "--store", "memory://absent", "-o", "json", "job")
	if code != exitNoRecord || stdout != `{"name":"job","absent":true}`+"\n" || stderr != "" {
		t.Fatalf("get -o json of a missing record: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched := newNotifyBuffer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(context.WithValue(ctx, openerKey{}, o), []string{"watch", "--store", "memory://absent", "-o", "json", "job"}, watched, io.Discard)
	}()
	watched.waitFor(t, "\n", 10*time.Second)
	cancel()
	<-done
	if first, _, _ := strings.Cut(watched.String(), "\n"); first+"\n" != stdout {
		t.Errorf("watch -o json prints %q for a missing record, get -o json %q", first, stdout)
	}
	code, stdout, stderr = inProcessSplit(context.Background(), o, "get", "--store", "memory://absent", "job")
	if code != exitNoRecord || stdout != "" || !strings.Contains(stderr, `no lease record for "job"`) {
		t.Errorf("get of a missing record: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = inProcessSplit(context.Background(), o, "get", "-o", "json", "job")
	if code != 1 || !strings.Contains(stderr, "--store or TENURE_STORE is required") {
		t.Errorf("get without a store: exit %d, stderr %q; want 1", code, stderr)
	}
}

// The timing flags set the lease.Config fields of their names, over the
// TENURE_* variables, and a Config they make invalid is an error that
// says where each value involved came from.
func TestTimingFlagsConfig(t *testing.T) {
	def := lease.DefaultConfig()
	tests := []struct {
		name    string
		flags   []string
		env     map[string]string
		ok      bool
		want    func(lease.Config) bool
		mention []string
	}{
		{name: "no flag: the elector reads the variables", flags: nil, env: map[string]string{"TENURE_LEASE_DURATION": "nonsense"}},
		{name: "flags set their fields", flags: []string{"--lease-duration", "3s", "--renew-deadline", "2s", "--retry-interval", "100ms", "--backend-timeout", "1s"}, ok: true,
			want: func(c lease.Config) bool {
				return c.LeaseDuration == 3*time.Second && c.RenewDeadline == 2*time.Second && c.RetryInterval == 100*time.Millisecond &&
					c.BackendTimeout == time.Second && c.ErrorInterval == def.ErrorInterval
			}},
		{name: "a short deadline needs a shorter backend timeout", flags: []string{"--renew-deadline", "2s", "--retry-interval", "1s"},
			mention: []string{"BackendTimeout (5s) must be < RenewDeadline (2s)", "BackendTimeout 5s from the default", "RenewDeadline 2s from --renew-deadline"}},
		{name: "a flag wins over the variables", flags: []string{"--lease-duration", "20s"}, ok: true,
			env: map[string]string{"TENURE_LEASE_DURATION": "30s", "TENURE_JOB_LEASE_DURATION": "40s", "TENURE_RENEW_DEADLINE": "12s"},
			want: func(c lease.Config) bool {
				return c.LeaseDuration == 20*time.Second && c.RenewDeadline == 12*time.Second
			}},
		{name: "invalid with the default", flags: []string{"--lease-duration", "1s"},
			mention: []string{"RenewDeadline (10s) must be < LeaseDuration (1s)", "LeaseDuration 1s from --lease-duration", "RenewDeadline 10s from the default"}},
		{name: "invalid with a variable", flags: []string{"--renew-deadline", "1s"}, env: map[string]string{"TENURE_JOB_RETRY_INTERVAL": "2s"},
			mention: []string{"RetryInterval*(1+RetryJitter)", "RenewDeadline 1s from --renew-deadline", "RetryInterval 2s from TENURE_JOB_RETRY_INTERVAL", "RetryJitter 0.1 from the default"}},
		{name: "negative", flags: []string{"--retry-interval", "-1s"},
			mention: []string{"RetryInterval is -1s", "RetryInterval -1s from --retry-interval"}},
		{name: "a variable that cannot be parsed", flags: []string{"--retry-interval", "1s"}, env: map[string]string{"TENURE_RENEW_DEADLINE": "soon"},
			mention: []string{"TENURE_RENEW_DEADLINE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			var tf timingFlags
			tf.define(fs)
			if err := fs.Parse(tt.flags); err != nil {
				t.Fatal(err)
			}
			tf.visit(fs)
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			cfg, ok, err := tf.config("job", lookup)
			switch {
			case len(tt.mention) > 0:
				if err == nil {
					t.Fatalf("config = %+v, want an error", cfg)
				}
				for _, m := range tt.mention {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q lacks %q", err, m)
					}
				}
			case err != nil || ok != tt.ok || tt.want != nil && !tt.want(cfg):
				t.Errorf("config = %+v, %v, %v", cfg, ok, err)
			}
		})
	}
}

// tenure run applies its timing flags: the grace warning computes with
// them, and a bad one fails before the election.
func TestRunTimingFlags(t *testing.T) {
	fastEnv(t)
	r := listen(t)
	t.Setenv("TENURE_TEST_CHILD", r.sock)
	t.Setenv("TENURE_TEST_CHILD_EXIT", "1")
	self, _ := os.Executable()
	o := &storeurl.Opener{}
	code, out := inProcess(context.Background(), o, "run", "--store", "memory://timing", "--lease-duration", "3s", "--renew-deadline", "2500ms", "--backend-timeout", "1s", "job", "--grace", "1s", "--", self)
	if code != 4 || !strings.Contains(out.String(), "--grace 1s is not below LeaseDuration - RenewDeadline (500ms)") {
		t.Fatalf("exit %d, want 4 with a grace warning computed from the flags:\n%s", code, out)
	}
	r.next(t, 10*time.Second)
	code, out = inProcess(context.Background(), o, "run", "--store", "memory://timing", "--lease-duration", "1s", "job", "--", self)
	if code != 1 || !strings.Contains(out.String(), "LeaseDuration 1s from --lease-duration") || strings.Contains(out.String(), "leads") {
		t.Fatalf("exit %d, want 1 naming --lease-duration before the election:\n%s", code, out)
	}
}

// With -v, a follower says who leads, with the leader's token, and says
// it again when another process leads.
func TestRunVerboseFollowerSaysWhoLeads(t *testing.T) {
	fastEnv(t)
	r := listen(t)
	t.Setenv("TENURE_TEST_CHILD", r.sock)
	self, _ := os.Executable()
	o := &storeurl.Opener{}
	type proc struct {
		cancel context.CancelFunc
		out    *notifyBuffer
		done   chan struct{}
	}
	start := func(id string, verbose bool) *proc {
		ctx, cancel := context.WithCancel(context.Background())
		p := &proc{cancel: cancel, out: newNotifyBuffer(), done: make(chan struct{})}
		args := []string{"run", "--store", "memory://verbose", "--identity", id, "--grace", "1s", "job", "--", self}
		if verbose {
			args = append([]string{"run", "-v"}, args[1:]...)
		}
		go func() {
			defer close(p.done)
			run(context.WithValue(ctx, openerKey{}, o), args, p.out, p.out)
		}()
		t.Cleanup(func() { cancel(); <-p.done })
		return p
	}
	a := start("a", false)
	if ev, who, _ := r.next(t, 10*time.Second); ev != "start" || who != "a" {
		t.Fatalf("first report: %s %s", ev, who)
	}
	b, c := start("b", true), start("c", true)
	b.out.waitFor(t, `tenure run: a leads "job" (token 1); b follows and waits to lead`, 10*time.Second)
	c.out.waitFor(t, `tenure run: a leads "job" (token 1); c follows and waits to lead`, 10*time.Second)
	a.cancel()
	<-a.done
	r.next(t, 10*time.Second) // a's child stops
	ev, next, tok := r.next(t, 10*time.Second)
	if ev != "start" || tok != 2 {
		t.Fatalf("after a stopped: %s %s %d", ev, next, tok)
	}
	follower := map[string]*proc{"b": c, "c": b}[next]
	follower.out.waitFor(t, `tenure run: `+next+` leads "job" (token 2); `, 10*time.Second)
	if strings.Contains(a.out.String(), "follows") {
		t.Errorf("without -v, a said who leads:\n%s", a.out)
	}
}
