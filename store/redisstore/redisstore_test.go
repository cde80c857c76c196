package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
)

type meta struct {
	Addr string
}

// eventTimeout bounds every wait for a watch event.
const eventTimeout = 10 * time.Second

// uniquePrefix returns a key prefix of the test's own, so that tests on the
// shared server never see each other's records.
func uniquePrefix(t testing.TB) string {
	return fmt.Sprintf("test:%s:%d:", t.Name(), time.Now().UnixNano())
}

// newStore returns a store on a client of srv, under a prefix of the test's
// own.
func newStore(t testing.TB, srv *testcluster.Redis, opts ...redisstore.Option) (*redisstore.Store[meta], *redis.Client) {
	t.Helper()
	c := srv.Client(t)
	st, err := redisstore.New[meta](c, append([]redisstore.Option{redisstore.WithPrefix(uniquePrefix(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return st, c
}

func rec(holder string, token uint64) lease.Record[meta] {
	now := time.Now()
	return lease.Record[meta]{
		Holder: holder, Token: token, AcquiredAt: now, RenewedAt: now,
		LeaseDuration: time.Second, Metadata: meta{Addr: holder + ":80"},
	}
}

func mustSwap(t *testing.T, st store.Store[meta], name string, expected lease.Revision, next lease.Record[meta]) (lease.Record[meta], lease.Revision) {
	t.Helper()
	got, rev, err := st.CompareAndSwap(t.Context(), name, expected, next)
	if err != nil {
		t.Fatalf("CompareAndSwap(%q, %d): %v", name, expected, err)
	}
	return got, rev
}

// nextEvent waits for the next event of ch.
func nextEvent(t *testing.T, ch <-chan store.Event[meta]) store.Event[meta] {
	t.Helper()
	return testcluster.NextEvent(t, ch, eventTimeout)
}

// waitRevision reads events from ch until one reaches revision rev, checking
// that revisions never go back.
func waitRevision(t *testing.T, ch <-chan store.Event[meta], rev lease.Revision) store.Event[meta] {
	t.Helper()
	var last lease.Revision
	for {
		ev := nextEvent(t, ch)
		if ev.Err != nil || ev.Absent {
			t.Fatalf("event %+v while waiting for revision %d", ev, rev)
		}
		if ev.Revision <= last {
			t.Fatalf("revision %d after %d", ev.Revision, last)
		}
		last = ev.Revision
		if ev.Revision >= rev {
			return ev
		}
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := redisstore.New[meta](nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	// A codec of another metadata type does not compile.
	for _, codec := range []store.Codec[meta]{nil, store.JSONCodec[meta]{}} {
		if _, err := redisstore.NewWithCodec(c, codec, nil); err != nil {
			t.Errorf("NewWithCodec with codec %T and a nil option: %v", codec, err)
		}
	}
}

func TestKeyLayout(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	st, err := redisstore.New[meta](c, redisstore.WithPrefix("app:"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"billing":       "app:tenure:{billing}",
		"a:b":           "app:tenure:{a:b}",
		"{x}":           "app:tenure:{%7Bx%7D}",
		"50%":           "app:tenure:{50%25}",
		"日本 語":          "app:tenure:{日本 語}",
		"a}:changes{b":  "app:tenure:{a%7D:changes%7Bb}",
		"%7D":           "app:tenure:{%257D}",
		"tenure:{other": "app:tenure:{tenure:%7Bother}",
	} {
		key, err := st.Key(name)
		if err != nil || key != want {
			t.Errorf("Key(%q) = %q, %v; want %q", name, key, err, want)
		}
		ch, err := st.Channel(name)
		if err != nil || ch != want+":changes" {
			t.Errorf("Channel(%q) = %q, %v; want %q", name, ch, err, want+":changes")
		}
	}
	if _, err := st.Key(""); !errors.Is(err, store.ErrInvalidName) {
		t.Errorf("Key(\"\") error = %v, want ErrInvalidName", err)
	}
}

// Names with spaces, colons, braces, percent signs and unicode each get a
// hash of their own, and none reaches another's.
func TestAwkwardNames(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	names := []string{
		"with space", "a:b", "a:b:c", "{a}", "a}", "{", "}", "{}", "a{b}c",
		"%7B", "%", "%25", "a}:changes", "tenure:{x}", "ünïcødé ✓", "日本語",
		"emoji 🎉", strings.Repeat("長", store.MaxNameBytes/3),
	}
	revs := map[string]lease.Revision{}
	keys := map[string]string{}
	for i, name := range names {
		key, err := st.Key(name)
		if err != nil {
			t.Fatalf("Key(%q): %v", name, err)
		}
		if other, dup := keys[key]; dup {
			t.Fatalf("names %q and %q share the key %q", name, other, key)
		}
		keys[key] = name
		_, revs[name] = mustSwap(t, st, name, 0, rec(fmt.Sprintf("holder-%d", i), 1))
	}
	for i, name := range names {
		got, rev, err := st.Get(ctx, name)
		if err != nil || rev != revs[name] || got.Holder != fmt.Sprintf("holder-%d", i) {
			t.Errorf("Get(%q) = %q at %d, %v; want holder-%d at %d", name, got.Holder, rev, err, i, revs[name])
		}
	}
	// Exactly one key per name, each the one Key names, and the create
	// gate's marker.
	prefix, _ := strings.CutSuffix(mustKey(t, st, "x"), "tenure:{x}")
	keys[prefix+"tenure:marker"] = ""
	found, err := c.Keys(ctx, redisGlobEscape(prefix)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(names)+1 {
		t.Fatalf("%d keys under the prefix, want %d: %q", len(found), len(names)+1, found)
	}
	for _, k := range found {
		if _, ok := keys[k]; !ok {
			t.Errorf("unexpected key %q", k)
		}
	}
}

func mustKey(t *testing.T, st *redisstore.Store[meta], name string) string {
	t.Helper()
	k, err := st.Key(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// redisGlobEscape escapes the glob characters of KEYS patterns.
func redisGlobEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestOversizedMetadata(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv)
	held, rev := mustSwap(t, st, "big", 0, rec("a", 1))
	big := held
	big.Metadata.Addr = strings.Repeat("x", store.MaxMetadataBytes)
	_, _, err := st.CompareAndSwap(t.Context(), "big", rev, big)
	if !errors.Is(err, store.ErrMetadataTooLarge) {
		t.Fatalf("error = %v, want ErrMetadataTooLarge", err)
	}
	got, gotRev, err := st.Get(t.Context(), "big")
	if err != nil || gotRev != rev || got.Metadata != held.Metadata {
		t.Fatalf("after the refused write Get = %+v at %d, %v", got, gotRev, err)
	}
}

// A hash changed by anything but the store is reported as corrupt by Get,
// CompareAndSwap and Watch, and is never overwritten.
func TestCorruptRecord(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	ctx := t.Context()
	cases := []struct {
		label string
		spoil func(c *redis.Client, key string) error
	}{
		{"holder edited", func(c *redis.Client, key string) error { return c.HSet(ctx, key, "holder", "mallory").Err() }},
		{"token edited", func(c *redis.Client, key string) error { return c.HSet(ctx, key, "token", "999999999999999999").Err() }},
		{"rev garbage", func(c *redis.Client, key string) error { return c.HSet(ctx, key, "rev", "garbage").Err() }},
		{"meta garbage", func(c *redis.Client, key string) error { return c.HSet(ctx, key, "meta", "{not json").Err() }},
		{"field deleted", func(c *redis.Client, key string) error { return c.HDel(ctx, key, "renewed").Err() }},
		{"sum deleted", func(c *redis.Client, key string) error { return c.HDel(ctx, key, "sum").Err() }},
		{"not a hash", func(c *redis.Client, key string) error {
			if err := c.Del(ctx, key).Err(); err != nil {
				return err
			}
			return c.Set(ctx, key, "a string", 0).Err()
		}},
		{"a hash of strangers", func(c *redis.Client, key string) error {
			if err := c.Del(ctx, key).Err(); err != nil {
				return err
			}
			return c.HSet(ctx, key, "owner", "someone else").Err()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.label, func(t *testing.T) {
			st, c := newStore(t, srv)
			name := "corrupt"
			key := mustKey(t, st, name)
			held, rev := mustSwap(t, st, name, 0, rec("a", 1))
			ch, err := st.Watch(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			waitRevision(t, ch, rev)
			if err := tc.spoil(c, key); err != nil {
				t.Fatal(err)
			}
			before, _ := c.Dump(ctx, key).Result()

			if _, _, err := st.Get(ctx, name); !errors.Is(err, store.ErrCorruptRecord) {
				t.Errorf("Get: error %v, want ErrCorruptRecord", err)
			}
			for _, expected := range []lease.Revision{rev, 0, rev + 1} {
				next := held
				next.Holder = "b"
				_, _, err := st.CompareAndSwap(ctx, name, expected, next)
				if !errors.Is(err, store.ErrCorruptRecord) {
					t.Errorf("CompareAndSwap expecting %d: error %v, want ErrCorruptRecord", expected, err)
				}
			}
			if after, _ := c.Dump(ctx, key).Result(); after != before {
				t.Error("the corrupt record was overwritten")
			}
			// A new watcher gets the corruption as its first event.
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ch2, err := st.Watch(wctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, ch2); !errors.Is(ev.Err, store.ErrCorruptRecord) {
				t.Errorf("first event of a new watch = %+v, want an Err wrapping ErrCorruptRecord", ev)
			}
			// Deleting the key by hand is the way out; the next record
			// gets a larger revision and token.
			if err := c.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			again, rev2 := mustSwap(t, st, name, 0, rec("b", held.Token+1))
			if rev2 <= rev || again.Token <= held.Token {
				t.Errorf("after repair: revision %d, token %d; want above %d and %d", rev2, again.Token, rev, held.Token)
			}
		})
	}
}

// Metadata that the codec cannot read (the metadata type changed between
// deployments, say) is corrupt too, though the hash itself is intact.
func TestUndecodableMetadata(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	c := srv.Client(t)
	prefix := uniquePrefix(t)
	ctx := t.Context()
	writer, err := redisstore.New[map[string]int](c, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	reader, err := redisstore.New[meta](c, redisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	_, rev, err := writer.CompareAndSwap(ctx, "typed", 0, lease.Record[map[string]int]{Holder: "a", Token: 1, LeaseDuration: time.Second, Metadata: map[string]int{"Addr": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := reader.Get(ctx, "typed"); !errors.Is(err, store.ErrCorruptRecord) {
		t.Fatalf("Get: error %v, want ErrCorruptRecord", err)
	}
	if _, _, err := reader.CompareAndSwap(ctx, "typed", 0, rec("b", 2)); !errors.Is(err, store.ErrCorruptRecord) {
		t.Fatalf("CompareAndSwap: error %v, want ErrCorruptRecord", err)
	}
	if _, got, err := writer.Get(ctx, "typed"); err != nil || got != rev {
		t.Fatalf("the record changed: revision %d, %v", got, err)
	}
}

// The server restarts without its data: the next record of a name gets a
// larger token and revision than any before, and a watcher learns that the
// record vanished, then sees the new one.
func TestRestartWithDataLoss(t *testing.T) {
	srv := testcluster.NewRedis(t)
	st, _ := newStore(t, srv)
	ctx := t.Context()
	ch, err := st.Watch(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); !ev.Absent {
		t.Fatalf("first event %+v, want Absent", ev)
	}
	var (
		r   lease.Record[meta]
		rev lease.Revision
	)
	// Many terms, so that the token is well above its creation floor.
	for i := range 50 {
		next := rec(fmt.Sprintf("holder-%d", i%3), r.Token+1)
		r, rev = mustSwap(t, st, "job", rev, next)
	}
	waitRevision(t, ch, rev)

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after the restart: error %v, want ErrNotFound", err)
	}
	if ev := nextEvent(t, ch); !ev.Absent {
		t.Fatalf("watch event after the restart = %+v, want Absent", ev)
	}
	// A caller that knows nothing proposes token 1.
	again, rev2 := mustSwap(t, st, "job", 0, rec("holder-new", 1))
	if again.Token <= r.Token {
		t.Errorf("token after the data loss %d, not above %d", again.Token, r.Token)
	}
	if rev2 <= rev {
		t.Errorf("revision after the data loss %d, not above %d", rev2, rev)
	}
	if ev := waitRevision(t, ch, rev2); ev.Record.Holder != "holder-new" || ev.Revision != rev2 {
		t.Errorf("watch event %+v, want holder-new at %d", ev, rev2)
	}
	// A caller that remembers the old revision gets a conflict with
	// nothing, not a write.
	if _, got, err := st.CompareAndSwap(ctx, "other", rev, rec("x", 1)); !errors.Is(err, store.ErrConflict) || got != 0 {
		t.Errorf("swap of a lost record: revision %d, error %v; want 0 and ErrConflict", got, err)
	}
}

// Every revision is at least the server's time in microseconds, and every
// new term's token too: that is what keeps them growing across data loss.
func TestFloorsFollowServerTime(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	before, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, rev := mustSwap(t, st, "floor", 0, rec("a", 1))
	if floor := uint64(before.UnixMicro()); uint64(rev) < floor || r.Token < floor {
		t.Fatalf("revision %d, token %d; want both >= the server's time %d", rev, r.Token, floor)
	}
	renewed, rev2 := mustSwap(t, st, "floor", rev, r)
	if renewed.Token != r.Token {
		t.Fatalf("a renewal changed the token from %d to %d", r.Token, renewed.Token)
	}
	if rev2 <= rev {
		t.Fatalf("revision %d after %d", rev2, rev)
	}
	released := renewed
	released.Holder = ""
	released, rev3 := mustSwap(t, st, "floor", rev2, released)
	if released.Token != r.Token {
		t.Fatalf("a release changed the token from %d to %d", r.Token, released.Token)
	}
	// A token above the floor is kept as proposed.
	high := rec("b", 1<<52)
	got, _ := mustSwap(t, st, "floor", rev3, high)
	if got.Token != 1<<52 {
		t.Fatalf("token %d, want the proposed %d", got.Token, uint64(1<<52))
	}
}

// The connection the store uses is cut: the next operation still works.
func TestClientKill(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv)
	ctx := t.Context()
	admin := srv.Client(t)
	r, rev := mustSwap(t, st, "kill", 0, rec("a", 1))
	for i := range 3 {
		n, err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Result()
		if err != nil || n == 0 {
			t.Fatalf("CLIENT KILL: %d killed, %v", n, err)
		}
		r, rev = mustSwap(t, st, "kill", rev, r)
		if _, got, err := st.Get(ctx, "kill"); err != nil || got != rev {
			t.Fatalf("round %d: Get after CLIENT KILL: revision %d, %v", i, got, err)
		}
	}
}

// A watcher whose subscription is cut subscribes again and still delivers
// every later change, and the state written while it was cut.
func TestWatchAfterClientKill(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchAfterClientKill(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchAfterClientKill(t, true) })
}

func testWatchAfterClientKill(t *testing.T, viaFunc bool) {
	srv := testcluster.PackageRedis(t)
	st, _ := newStore(t, srv, redisstore.WithWatchBackoff(10*time.Millisecond, 100*time.Millisecond))
	ctx := t.Context()
	admin := srv.Client(t)
	r, rev := mustSwap(t, st, "watched", 0, rec("a", 1))
	ch, err := testcluster.WatchChan(t, ctx, st, "watched", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, ch, rev)
	for i := range 3 {
		n, err := admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
		if err != nil || n == 0 {
			t.Fatalf("CLIENT KILL TYPE pubsub: %d killed, %v", n, err)
		}
		// This write may land while the watcher is not subscribed: the
		// re-read after the reconnection must still deliver it.
		r.RenewedAt = time.Now()
		r, rev = mustSwap(t, st, "watched", rev, r)
		waitRevision(t, ch, rev)
		r, rev = mustSwap(t, st, "watched", rev, r)
		if ev := waitRevision(t, ch, rev); ev.Revision != rev {
			t.Fatalf("round %d: revision %d, want %d", i, ev.Revision, rev)
		}
	}
}

// A watcher whose server hangs notices through its health-check ping,
// subscribes again once the server answers, and catches up.
func TestWatchHealthCheck(t *testing.T) {
	srv := testcluster.NewRedis(t)
	st, _ := newStore(t, srv,
		redisstore.WithWatchHealthCheck(100*time.Millisecond),
		redisstore.WithWatchBackoff(10*time.Millisecond, 50*time.Millisecond))
	ctx := t.Context()
	r, rev := mustSwap(t, st, "hang", 0, rec("a", 1))
	ch, err := st.Watch(ctx, "hang")
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, ch, rev)
	admin := srv.Client(t)
	old := pubsubClients(t, admin)
	if len(old) != 1 {
		t.Fatalf("%d Pub/Sub connections, want the watcher's alone", len(old))
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	// The fault: the server hangs for five health-check periods, long
	// enough for the watcher to ping, wait and give its connection up.
	time.Sleep(500 * time.Millisecond)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	_, rev = mustSwap(t, st, "hang", rev, r)
	waitRevision(t, ch, rev)
	// The watcher is on a new connection: the old one was given up, not
	// merely woken by the resumed server. The server drops the old one when
	// it reads its close; there is no event for that, so poll.
	deadline := time.Now().Add(eventTimeout)
	for tick := time.NewTicker(10 * time.Millisecond); ; <-tick.C {
		now := pubsubClients(t, admin)
		if len(now) == 1 && now[0] != old[0] {
			tick.Stop()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Pub/Sub connections %q, want one other than %q", now, old)
		}
	}
}

// pubsubClients returns the ids of the server's Pub/Sub connections.
func pubsubClients(t *testing.T, c *redis.Client) []string {
	t.Helper()
	list, err := c.Do(t.Context(), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for line := range strings.Lines(list) {
		for field := range strings.FieldsSeq(line) {
			if id, ok := strings.CutPrefix(field, "id="); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Cancelling the watch's context closes its channel, even while the watcher
// is reconnecting to a server that is gone.
func TestWatchCancelWhileServerDown(t *testing.T) {
	t.Run("Watch", func(t *testing.T) { testWatchCancelWhileServerDown(t, false) })
	t.Run("WatchFunc", func(t *testing.T) { testWatchCancelWhileServerDown(t, true) })
}

func testWatchCancelWhileServerDown(t *testing.T, viaFunc bool) {
	srv := testcluster.NewRedis(t)
	st, _ := newStore(t, srv, redisstore.WithWatchBackoff(10*time.Millisecond, 20*time.Millisecond))
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := testcluster.WatchChan(t, ctx, st, "gone", viaFunc)
	if err != nil {
		t.Fatal(err)
	}
	nextEvent(t, ch)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	cancel()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				if _, err := testcluster.WatchChan(t, t.Context(), st, "gone", viaFunc); err == nil {
					t.Fatal("Watch succeeded with the server down")
				}
				return
			}
		case <-timer.C:
			t.Fatal("the watch channel is still open after its context ended")
		}
	}
}

// The server forgets its scripts (SCRIPT FLUSH, or a restart): the next
// CompareAndSwap loads the script again and succeeds.
func TestScriptFlushed(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	r, rev := mustSwap(t, st, "flush", 0, rec("a", 1))
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r, rev2 := mustSwap(t, st, "flush", rev, r)
	if rev2 <= rev {
		t.Fatalf("revision %d after %d", rev2, rev)
	}
	// A conflict after a flush still carries the record.
	if _, got, err := st.CompareAndSwap(ctx, "flush", rev, r); !errors.Is(err, store.ErrConflict) || got != rev2 {
		t.Fatalf("stale swap: revision %d, %v; want %d and ErrConflict", got, err, rev2)
	}
}

// A server that does not answer: the context's deadline still ends the
// call, though go-redis (without ContextTimeoutEnabled) would wait for its
// own read timeout.
func TestDeadlineWithHungServer(t *testing.T) {
	srv := testcluster.NewRedis(t)
	st, _ := newStore(t, srv)
	r, rev := mustSwap(t, st, "hung", 0, rec("a", 1))
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	for _, op := range []string{"Get", "CompareAndSwap"} {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		start := time.Now()
		var err error
		if op == "Get" {
			_, _, err = st.Get(ctx, "hung")
		} else {
			_, _, err = st.CompareAndSwap(ctx, "hung", rev, r)
		}
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: error %v, want one wrapping context.DeadlineExceeded", op, err)
		}
		if took > 2*time.Second {
			t.Errorf("%s returned %v after a 100ms deadline", op, took)
		}
	}
}

// The fields of the hash are readable by people with redis-cli.
func TestHashIsReadable(t *testing.T) {
	srv := testcluster.PackageRedis(t)
	st, c := newStore(t, srv)
	ctx := t.Context()
	r := rec("worker-1", 1)
	r.AcquiredAt = time.Date(2025, 6, 1, 12, 0, 0, 5, time.FixedZone("CEST", 2*3600))
	r.RenewedAt = r.AcquiredAt.Add(time.Second)
	r.Transitions = 4
	got, rev := mustSwap(t, st, "readable", 0, r)
	h, err := c.HGetAll(ctx, mustKey(t, st, "readable")).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"rev":         fmt.Sprint(rev),
		"holder":      "worker-1",
		"token":       fmt.Sprint(got.Token),
		"acquired":    "2025-06-01T10:00:00.000000005Z",
		"renewed":     "2025-06-01T10:00:01.000000005Z",
		"duration":    "1000000000",
		"transitions": "4",
		"meta":        `{"Addr":"worker-1:80"}`,
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("field %s = %q, want %q", k, h[k], v)
		}
	}
	keys := slices.Sorted(maps.Keys(h))
	if want := []string{"acquired", "duration", "holder", "meta", "op", "renewed", "rev", "sum", "token", "transitions"}; strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("fields %q, want %q", keys, want)
	}
}

func TestMayLoseRecords(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	st, _ := redisstore.New[meta](c)
	if !st.MayLoseRecords() {
		t.Error("MayLoseRecords is false by default")
	}
	st, _ = redisstore.New[meta](c, redisstore.WithMayLoseRecords(false))
	if st.MayLoseRecords() {
		t.Error("MayLoseRecords is true after WithMayLoseRecords(false)")
	}
}
