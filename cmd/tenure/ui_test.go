package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/storeurl"
)

// TestUIServesTheElectionsUnderAPrefix runs tenure ui on a memory store
// and reads the page and its state; the command ends when ctx does.
func TestUIServesTheElectionsUnderAPrefix(t *testing.T) {
	o := &storeurl.Opener{}
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), openerKey{}, o))
	defer cancel()
	st, err := storeurl.Open[rawMeta](ctx, o, "memory://ui")
	if err != nil {
		t.Fatal(err)
	}
	for name, holder := range map[string]string{"jobs/a": "node-1", "jobs/b": "node-2", "other": "node-3"} {
		if _, _, err := st.CompareAndSwap(ctx, name, 0, lease.Record[rawMeta]{Holder: holder, Token: 1, LeaseDuration: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	lines := make(chan string, 10)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ui", "--store", "memory://ui", "--addr", "127.0.0.1:0", "jobs/"}, io.Discard, &lineWriter{lines: lines})
	}()
	var base string
	select {
	case l := <-lines:
		var ok bool
		if base, ok = strings.CutPrefix(l, "tenure ui: serving "); !ok {
			t.Fatalf("first line %q, want the address served", l)
		}
	case code := <-done:
		t.Fatalf("tenure ui exited %d before serving", code)
	case <-time.After(10 * time.Second):
		t.Fatal("tenure ui did not say where it serves within 10s")
	}
	page := httpGet(t, base)
	if !strings.Contains(page, "<title>tenure ui</title>") {
		t.Fatalf("page: %s", page)
	}
	var state struct {
		Prefix string
		Rows   []struct{ Name, Holder string }
	}
	// The first listing may not have run yet: ask until it has (bounded).
	deadline := time.Now().Add(10 * time.Second)
	for len(state.Rows) == 0 && time.Now().Before(deadline) {
		if err := json.Unmarshal([]byte(httpGet(t, base+"api/state")), &state); err != nil {
			t.Fatal(err)
		}
	}
	if state.Prefix != "jobs/" || len(state.Rows) != 2 || state.Rows[0].Holder != "node-1" || state.Rows[1].Name != "jobs/b" {
		t.Fatalf("state = %+v, want jobs/a and jobs/b", state)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("tenure ui exited %d after its context ended, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tenure ui did not end within 10s of its context")
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
	}
	return string(b)
}

// unlisted is a store that cannot list: memstore with List hidden.
type unlisted struct {
	store.Store[rawMeta]
	store.Watcher[rawMeta]
}

func (unlisted) MayLoseRecords() bool { return false }
func (unlisted) Close() error         { return nil }

func TestUIRefusesAStoreThatCannotListUnlessNamed(t *testing.T) {
	ms := memstore.New[rawMeta]()
	err := storeurl.Register("uitest-unlisted", func(context.Context, *url.URL) (storeurl.Store[rawMeta], error) {
		return unlisted{ms, ms}, nil
	})
	if err != nil && !errors.Is(err, storeurl.ErrDuplicateScheme) {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"ui", "--store", "uitest-unlisted://x", "--addr", "127.0.0.1:0"}, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "cannot list its records") || !strings.Contains(stderr.String(), "-name") {
		t.Fatalf("exit %d, stderr %q; want 1 and a message saying to name the elections", code, stderr.String())
	}
}

func TestUIRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "memory://x", "a", "b"}, "at most one PREFIX"},
		{[]string{"--store", "memory://x", "--interval", "0s"}, "-interval is 0s"},
		{[]string{"--store", "memory://x", "--history", "0"}, "-history is 0"},
		{[]string{"--store", "memory://x", "--name", "a", "pre"}, "Prefix"},
		{[]string{"--store", "memory://x", "--addr", "256.0.0.1:1"}, "-addr 256.0.0.1:1"},
	} {
		var stderr bytes.Buffer
		code := run(t.Context(), append([]string{"ui"}, tc.args...), io.Discard, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("tenure ui %v: exit %d, stderr %q; want an error with %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
