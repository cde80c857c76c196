package etcdfence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/etcdfence"
	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

func newClient(tb testing.TB) *clientv3.Client {
	tb.Helper()
	e := testcluster.PackageEtcd(tb)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func uniqueKey(tb testing.TB) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "fence-" + hex.EncodeToString(b) + "/value"
}

func value(t *testing.T, c *clientv3.Client, key string) string {
	t.Helper()
	resp, err := c.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "<absent>"
	}
	return string(resp.Kvs[0].Value)
}

func TestPutAcceptsOnlyTokensAtOrAboveTheHighest(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	key := uniqueKey(t)
	steps := []struct {
		token fence.Token
		value string
		stale bool
	}{
		{5, "v5", false},
		{5, "v5b", false}, // the same term writes again
		{4, "v4", true},   // an older term
		{0, "v0", true},
		{1 << 52, "big", false}, // a new term
		{5, "v5c", true},
		{fence.Token(lease.MaxToken), "max", false},
	}
	want := "<absent>"
	for _, s := range steps {
		err := etcdfence.Put(ctx, c, s.token, key, s.value)
		if s.stale != errors.Is(err, fence.ErrStaleToken) || (!s.stale && err != nil) {
			t.Fatalf("Put(%d, %q) = %v; stale %v", s.token, s.value, err, s.stale)
		}
		if !s.stale {
			want = s.value
		}
		if got := value(t, c, key); got != want {
			t.Fatalf("after Put(%d): %q, want %q", s.token, got, want)
		}
	}
	if h, err := etcdfence.Highest(ctx, c, key); err != nil || h != fence.Token(lease.MaxToken) {
		t.Fatalf("Highest = %d, %v", h, err)
	}
	if h, err := etcdfence.Highest(ctx, c, uniqueKey(t)); err != nil || h != 0 {
		t.Fatalf("Highest of a fresh key = %d, %v", h, err)
	}
}

// A token above lease.MaxToken, which no store issues, is refused by Put
// and Do before anything is sent: accepted, it would lock the key against
// every real token for good.
func TestRefusesTokensAboveMaxToken(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	key := uniqueKey(t)
	if err := etcdfence.Put(ctx, c, 7, key, "seven"); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []fence.Token{fence.Token(lease.MaxToken) + 1, 1 << 63, ^fence.Token(0)} {
		for name, write := range map[string]func() error{
			"Put":        func() error { return etcdfence.Put(ctx, c, tok, key, "forged") },
			"PutContext": func() error { return etcdfence.PutContext(fence.WithToken(ctx, tok), c, key, "forged") },
			"Do":         func() error { return etcdfence.Do(ctx, c, tok, key, clientv3.OpPut(key, "forged")) },
			"DoContext": func() error {
				return etcdfence.DoContext(fence.WithToken(ctx, tok), c, key, clientv3.OpPut(key, "forged"))
			},
		} {
			err := write()
			if !errors.Is(err, fence.ErrTokenOutOfRange) || !strings.Contains(err.Error(), fmt.Sprint(uint64(tok))) {
				t.Fatalf("%s with token %d: %v, want an error wrapping fence.ErrTokenOutOfRange naming the token", name, tok, err)
			}
		}
		if h, err := etcdfence.Highest(ctx, c, key); err != nil || h != 7 {
			t.Fatalf("after token %d: Highest = %d, %v; want 7", tok, h, err)
		}
		if got := value(t, c, key); got != "seven" {
			t.Fatalf("after token %d: the value is %q", tok, got)
		}
	}
	if err := etcdfence.Put(ctx, c, fence.Token(lease.MaxToken), key, "max"); err != nil {
		t.Fatalf("Put with lease.MaxToken: %v", err)
	}
}

// Writers of two terms race: in etcd's history, no value of the older term
// follows one of the newer.
func TestRaceNeverOrdersAnOlderTermAfterANewer(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	key := uniqueKey(t)
	start, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, token := range []fence.Token{7, 8} {
		for i := range 10 {
			wg.Go(func() {
				err := etcdfence.Put(ctx, c, token, key, fmt.Sprintf("%d-%d", token, i))
				if err != nil && !errors.Is(err, fence.ErrStaleToken) {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	end, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	newer := false
	for wr := range c.Watch(wctx, key, clientv3.WithRev(start.Header.Revision+1)) {
		for _, ev := range wr.Events {
			v := string(ev.Kv.Value)
			if strings.HasPrefix(v, "8-") {
				newer = true
			} else if newer {
				t.Fatalf("%q written at revision %d, after a write of token 8", v, ev.Kv.ModRevision)
			}
			if ev.Kv.ModRevision >= end.Kvs[0].ModRevision {
				cancel()
			}
		}
	}
	if !newer {
		t.Fatal("token 8 never wrote")
	}
}

func TestDoRefusesStaleTokensAndTheTokenKey(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	res := uniqueKey(t)
	if err := etcdfence.Do(ctx, c, 3, res, clientv3.OpPut(res+"/a", "1"), clientv3.OpPut(res+"/b", "2")); err != nil {
		t.Fatal(err)
	}
	if err := etcdfence.Do(ctx, c, 2, res, clientv3.OpDelete(res+"/a")); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("stale Do: %v", err)
	}
	if got := value(t, c, res+"/a"); got != "1" {
		t.Fatalf("a stale Do applied: %q", got)
	}
	for _, op := range []clientv3.Op{
		clientv3.OpPut(etcdfence.TokenKey(res), "1"),
		clientv3.OpDelete(res, clientv3.WithPrefix()),
		clientv3.OpDelete("", clientv3.WithFromKey()),
		clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut(etcdfence.TokenKey(res), "1")}, nil),
	} {
		if err := etcdfence.Do(ctx, c, 9, res, op); !errors.Is(err, etcdfence.ErrInvalidKey) {
			t.Errorf("Do touching the token key: %v, want ErrInvalidKey", err)
		}
	}
	if h, _ := etcdfence.Highest(ctx, c, res); h != 3 {
		t.Fatalf("Highest = %d after refused operations, want 3", h)
	}
	tctx := fence.WithToken(ctx, 4)
	if err := etcdfence.DoContext(tctx, c, res, clientv3.OpDelete(res+"/b")); err != nil {
		t.Fatal(err)
	}
	if err := etcdfence.PutContext(ctx, c, res+"/c", "x"); !errors.Is(err, fence.ErrNoToken) {
		t.Fatalf("PutContext without a token: %v", err)
	}
}

func TestCorruptTokenKeyIsRefused(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	for _, v := range []string{"", "x", "007", "-1", "18446744073709551616"} {
		key := uniqueKey(t)
		if _, err := c.Put(ctx, etcdfence.TokenKey(key), v); err != nil {
			t.Fatal(err)
		}
		if err := etcdfence.Put(ctx, c, 5, key, "v"); !errors.Is(err, etcdfence.ErrCorruptToken) {
			t.Errorf("token key %q: Put = %v, want ErrCorruptToken", v, err)
		}
		if _, err := etcdfence.Highest(ctx, c, key); !errors.Is(err, etcdfence.ErrCorruptToken) {
			t.Errorf("token key %q: Highest = %v, want ErrCorruptToken", v, err)
		}
		if got := value(t, c, key); got != "<absent>" {
			t.Errorf("token key %q: written: %q", v, got)
		}
	}
	if err := etcdfence.Put(ctx, c, 5, "x"+":fence-token", "v"); !errors.Is(err, etcdfence.ErrInvalidKey) {
		t.Errorf("Put of a token key: %v", err)
	}
}

// Nil arguments are errors wrapping fence.ErrNilArgument; nothing panics.
func TestNilArguments(t *testing.T) {
	var nilCtx context.Context
	var nilClient *clientv3.Client
	ctx := context.Background()
	for name, f := range map[string]func() error{
		"Put nil ctx":    func() error { return etcdfence.Put(nilCtx, &clientv3.Client{}, 1, "k", "v") },
		"Put nil kv":     func() error { return etcdfence.Put(ctx, nil, 1, "k", "v") },
		"Put typed nil":  func() error { return etcdfence.Put(ctx, nilClient, 1, "k", "v") },
		"Put zero":       func() error { return etcdfence.Put(ctx, &clientv3.Client{}, 1, "k", "v") },
		"PutContext nil": func() error { return etcdfence.PutContext(ctx, nilClient, "k", "v") },
		"Do nil":         func() error { return etcdfence.Do(ctx, nilClient, 1, "k") },
		"DoContext nil":  func() error { return etcdfence.DoContext(nilCtx, nilClient, "k") },
		"Highest nil":    func() error { _, err := etcdfence.Highest(ctx, nilClient, "k"); return err },
	} {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return f()
		}()
		if !errors.Is(err, fence.ErrNilArgument) {
			t.Errorf("%s: %v, want fence.ErrNilArgument", name, err)
		}
	}
}

// The stale token's error names the token refused and the highest
// accepted, from Put and from Do.
func TestStaleErrorNamesTheHighestAccepted(t *testing.T) {
	ctx := t.Context()
	c := newClient(t)
	key := uniqueKey(t)
	if err := etcdfence.Put(ctx, c, 9, key, "term 9"); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"Put(3)": etcdfence.Put(ctx, c, 3, key, "term 3"),
		"Do(3)":  etcdfence.Do(ctx, c, 3, key, clientv3.OpPut(key, "term 3")),
	} {
		se, ok := errors.AsType[*fence.StaleTokenError](err)
		if !ok || se.Token != 3 || se.Highest != 9 || !errors.Is(err, fence.ErrStaleToken) {
			t.Fatalf("%s after Put(9) = %v, want a StaleTokenError{3, 9}", what, err)
		}
		if !strings.Contains(err.Error(), "token 3 refused, the highest accepted is 9") {
			t.Errorf("%s: error %q does not name both tokens", what, err)
		}
	}
	if got := value(t, c, key); got != "term 9" {
		t.Errorf("value %q, want term 9", got)
	}
}
