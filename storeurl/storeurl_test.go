package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/redisstore"
	"github.com/tenure-go/tenure/storeurl"
)

func TestMain(m *testing.M) {
	testcluster.Main(m)
}

type meta struct{ N int }

func TestMemoryStoresAreSharedByName(t *testing.T) {
	ctx := context.Background()
	o := &storeurl.Opener{}
	a, err := storeurl.Open[meta](ctx, o, "memory://one")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.CompareAndSwap(ctx, "job", 0, lease.Record[meta]{LeaseDuration: 15 * time.Second, Holder: "x", Token: 1}); err != nil {
		t.Fatal(err)
	}
	b, _ := storeurl.Open[meta](ctx, o, "memory://one")
	if rec, _, err := b.Get(ctx, "job"); err != nil || rec.Holder != "x" {
		t.Fatalf("memory://one opened twice: %+v %v", rec, err)
	}
	c, _ := storeurl.Open[meta](ctx, o, "memory://two")
	if _, _, err := c.Get(ctx, "job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("memory://two sees memory://one's record: %v", err)
	}
	if _, err := storeurl.Open[string](ctx, o, "memory://one"); !errors.Is(err, storeurl.ErrBadURL) {
		t.Fatalf("reopening with another metadata type: %v", err)
	}
}

// A nil *Opener opens every scheme as a zero Opener does, and its memory
// stores are shared with no other Open.
func TestNilOpenerActsAsAZeroOpenerOfItsOwn(t *testing.T) {
	t.Setenv("PGHOST", "")
	ctx := context.Background()
	for _, raw := range []string{
		"memory://x", "mem://x", "nosuch://host", "localhost:6379", "/just/a/path",
		"redis://", "postgres://", "host=db user=x", "kubernetes://", "etcd://",
	} {
		t.Run(raw, func(t *testing.T) {
			stNil, errNil := storeurl.Open[meta](ctx, nil, raw)
			stZero, errZero := storeurl.Open[meta](ctx, &storeurl.Opener{}, raw)
			for _, st := range []storeurl.Store[meta]{stNil, stZero} {
				if st != nil {
					_ = st.Close()
				}
			}
			if (errNil == nil) != (errZero == nil) || (errNil != nil && errNil.Error() != errZero.Error()) {
				t.Fatalf("Open(nil, %q) = %v, Open(&Opener{}, %q) = %v: want the same", raw, errNil, raw, errZero)
			}
		})
	}
	a, err := storeurl.Open[meta](ctx, nil, "memory://x")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.CompareAndSwap(ctx, "job", 0, lease.Record[meta]{LeaseDuration: 15 * time.Second, Holder: "x", Token: 1}); err != nil {
		t.Fatal(err)
	}
	b, err := storeurl.Open[meta](ctx, nil, "memory://x")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "job"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("two Opens of memory://x through nil share a store: Get = %v", err)
	}
}

func TestBadURLs(t *testing.T) {
	t.Setenv("PGHOST", "")
	ctx := context.Background()
	tests := []struct {
		url     string
		want    error
		mention string
	}{
		{"nosuch://host", storeurl.ErrUnknownScheme, `"nosuch"`},
		{"localhost:6379", storeurl.ErrUnknownScheme, `"localhost"`},
		{"/just/a/path", storeurl.ErrBadURL, "no scheme"},
		{"redis:localhost", storeurl.ErrBadURL, "want redis://"},
		{"redis://user:s3cret@host:notaport/0", storeurl.ErrBadURL, "xxxxx"},
		{"postgres://user:s3cret@%zz/db", storeurl.ErrBadURL, "cannot be parsed"},
		{"redis://localhost:1/0?may_lose_records=maybe", storeurl.ErrBadURL, "may_lose_records"},
		{"kubernetes://", storeurl.ErrBadURL, "want kubernetes://NAMESPACE"},
		{"kubernetes://ns/extra", storeurl.ErrBadURL, "want kubernetes://NAMESPACE"},
		{"kubernetes://me:s3cret@ns", storeurl.ErrBadURL, "takes no user or password"},
		// An empty host is an error, not localhost.
		{"redis://", storeurl.ErrBadURL, "the host is empty"},
		{"redis:///0", storeurl.ErrBadURL, "the host is empty"},
		{"redis://:s3cret@/0", storeurl.ErrBadURL, "the host is empty"},
		{"rediss://:6380", storeurl.ErrBadURL, "the host is empty"},
		{"unix://", storeurl.ErrBadURL, "the socket path is empty"},
		{"unix://tmp/redis.sock", storeurl.ErrBadURL, "takes no host"},
		{"postgres:///db", storeurl.ErrBadURL, "the host is empty"},
		{"postgresql://app:s3cret@/db", storeurl.ErrBadURL, "the host is empty"},
		{"host=db user=app password=s3cret", storeurl.ErrBadURL, "keyword/value string, not a URL"},
		{"etcd://", storeurl.ErrBadURL, "the host is empty"},
		{"etcd://:s3cret@/p", storeurl.ErrBadURL, "the host is empty"},
		{"etcd://db/p", storeurl.ErrBadURL, "HOST:PORT"},
		{"etcd://db:0/p", storeurl.ErrBadURL, "port"},
		{"etcd://u:s3cret@db:2379/p?may_lose_records=maybe", storeurl.ErrBadURL, "may_lose_records"},
		{"etcd://db:2379/p?prefix=x", storeurl.ErrBadURL, "unknown query parameters"},
		// Pool and timer parameters the client libraries would panic on,
		// allocate for without bound, overflow or loop on.
		{"redis://u:s3cret@127.0.0.1:1/?pool_size=-1", storeurl.ErrBadURL, "pool_size=-1 is out of range: it must be an integer in [0, 10000]"},
		{"redis://127.0.0.1:1/?pool_size=2147483648", storeurl.ErrBadURL, "pool_size=2147483648 is out of range"},
		{"redis://127.0.0.1:1/?min_idle_conns=1000000000", storeurl.ErrBadURL, "min_idle_conns=1000000000"},
		{"redis://127.0.0.1:1/?max_concurrent_dials=-3", storeurl.ErrBadURL, "max_concurrent_dials=-3"},
		{"redis://127.0.0.1:1/?pipeline_pool_size=-2", storeurl.ErrBadURL, "pipeline_pool_size=-2"},
		{"redis://127.0.0.1:1/?pipeline_read_buffer_size=-5", storeurl.ErrBadURL, "pipeline_read_buffer_size=-5"},
		{"redis://127.0.0.1:1/?max_retries=-2", storeurl.ErrBadURL, "max_retries=-2"},
		{"redis://127.0.0.1:1/?max_retries=101", storeurl.ErrBadURL, "max_retries=101 is out of range: it must be an integer in [-1, 100]"},
		{"redis://127.0.0.1:1/?read_timeout=9223372037", storeurl.ErrBadURL, "read_timeout=9223372037 is out of range"},
		{"postgres://u:s3cret@127.0.0.1:1/db?pool_health_check_period=0s", storeurl.ErrBadURL, "pool_health_check_period=0s is out of range: it must be at least 100ms"},
		{"postgres://u@127.0.0.1:1/db?pool_health_check_period=1ns", storeurl.ErrBadURL, "pool_health_check_period=1ns"},
		{"postgres://u@127.0.0.1:1/db?pool_health_check_period=-1m", storeurl.ErrBadURL, "pool_health_check_period=-1m0s"},
		{"postgres://u@127.0.0.1:1/db?pool_max_conns=20000", storeurl.ErrBadURL, "pool_max_conns=20000"},
		{"postgres://u@127.0.0.1:1/db?pool_min_conns=2147483647", storeurl.ErrBadURL, "pool_min_conns=2147483647"},
		{"postgres://u@127.0.0.1:1/db?pool_min_conns=5&pool_max_conns=4", storeurl.ErrBadURL, "pool_min_conns=5 is out of range: it must be an integer in [0, 4]"},
		{"postgres://u@127.0.0.1:1/db?pool_min_idle_conns=-1", storeurl.ErrBadURL, "pool_min_idle_conns=-1"},
		{"postgres://u@127.0.0.1:1/db?pool_max_conn_lifetime=-1s", storeurl.ErrBadURL, "pool_max_conn_lifetime=-1s"},
		{"postgres://u@127.0.0.1:1/db?pool_max_conn_lifetime_jitter=-1s", storeurl.ErrBadURL, "pool_max_conn_lifetime_jitter=-1s"},
	}
	for _, tt := range tests {
		_, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, tt.url)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("Open(%q) = %v; want %v mentioning %q", tt.url, err, tt.want, tt.mention)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) error shows the password: %v", tt.url, err)
		}
	}
}

// Pool and timer parameters at the edges of their ranges are handed to the
// client library as given: each URL gets as far as connecting (to a port
// where nothing listens).
func TestPoolParametersInRangeReachTheClient(t *testing.T) {
	t.Setenv("PGHOST", "")
	ctx := context.Background()
	for _, u := range []string{
		"redis://127.0.0.1:1/?pool_size=0&max_retries=-1",
		"redis://127.0.0.1:1/?pool_size=10000&min_idle_conns=0&max_concurrent_dials=10000&max_retries=-1",
		"redis://127.0.0.1:1/?pipeline_pool_size=-1&max_retries=-1",
		"redis://127.0.0.1:1/?pipeline_read_buffer_size=67108864&pipeline_write_buffer_size=0&max_retries=-1",
		"redis://127.0.0.1:1/?read_timeout=9223372036&write_timeout=-1&dial_timeout=1s&max_retries=-1",
		"postgres://u@127.0.0.1:1/db?pool_health_check_period=100ms&connect_timeout=5",
		"postgres://u@127.0.0.1:1/db?pool_min_conns=0&pool_max_conns=10000&pool_min_idle_conns=0&connect_timeout=5",
		"postgres://u@127.0.0.1:1/db?pool_max_conn_lifetime=0s&pool_max_conn_lifetime_jitter=0s&pool_ping_timeout=0s&connect_timeout=5",
	} {
		_, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, u)
		if !errors.Is(err, storeurl.ErrConnect) {
			t.Errorf("Open(%q) = %v; want ErrConnect (nothing listens there)", u, err)
		}
	}
}

// TestNoPasswordInAnyMessage opens store URLs and DSNs of every form with a
// credential in them, none of which can open (no server, or malformed):
// the error never shows the credential, as written or decoded.
func TestNoPasswordInAnyMessage(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig") // kubernetes:// cannot connect
	t.Setenv("PGHOST", "")
	tests := []struct {
		url    string
		secret string // as the server would see it
	}{
		{"redis://user:Pw1-secret@127.0.0.1:1/0", "Pw1-secret"},
		{"redis://:Pw2-secret@127.0.0.1:1/0", "Pw2-secret"},
		{"rediss://:Pw3-secret@127.0.0.1:1/0", "Pw3-secret"},
		{"redis://:Pw4-secret@/0", "Pw4-secret"},
		{"redis://:Pw5-secret@host:notaport/0", "Pw5-secret"},
		{"redis://127.0.0.1:1/0?password=Pw6-secret", "Pw6-secret"},
		{"redis://:Pw7-secret@127.0.0.1:1/notadb", "Pw7-secret"},
		{"redis://:Pw8/secret@127.0.0.1:1/0", "Pw8/secret"},
		{"redis://:Pw9?secret@127.0.0.1:1/0", "Pw9?secret"},
		{"redis://:Pw10#secret@127.0.0.1:1/0", "Pw10#secret"},
		{"redis://:Pw11%40secret@127.0.0.1:1/0", "Pw11@secret"},
		{"redis://:Pw12\x7fsecret@127.0.0.1:1/0", "Pw12\x7fsecret"},
		{"unix://:Pw13-secret@/nonexistent/redis.sock", "Pw13-secret"},
		{"unix:///nonexistent/redis.sock?password=Pw14-secret", "Pw14-secret"},
		{"unix://user:Pw15-secret@host/redis.sock", "Pw15-secret"},
		{"postgres://app:Pw16-secret@127.0.0.1:1/db?connect_timeout=2", "Pw16-secret"},
		{"postgres://app@127.0.0.1:1/db?password=Pw17-secret&connect_timeout=2", "Pw17-secret"},
		{"postgres://app@127.0.0.1:1/db?sslpassword=Pw18-secret&sslmode=disable&connect_timeout=2", "Pw18-secret"},
		{"postgres://app:Pw19-secret@127.0.0.1:1,127.0.0.1:2/db?connect_timeout=2", "Pw19-secret"},
		{"postgres://app:Pw20-secret@%zz/db", "Pw20-secret"},
		{"postgres://app@%zz/db?password=Pw21-secret", "Pw21-secret"},
		{"postgresql://app:Pw22%2Fsecret@/db", "Pw22/secret"},
		{"postgres://app:Pw23-secret@127.0.0.1:1/db?connect_timeout=soon", "Pw23-secret"},
		{"postgres://app:Pw24%zzsecret@127.0.0.1:1/db", "Pw24%zzsecret"},
		{"host=127.0.0.1 port=1 user=app password=Pw25-secret", "Pw25-secret"},
		{"host=127.0.0.1 password='Pw26 secret' user=app", "Pw26 secret"},
		{"host=db password='Pw27-secret", "Pw27-secret"},
		{"  password = Pw28-secret host=db", "Pw28-secret"},
		{"kubernetes://user:Pw29-secret@ns", "Pw29-secret"},
		{"kubernetes://ns?password=Pw30-secret", "Pw30-secret"},
		{"nosuch://user:Pw31-secret@host/x", "Pw31-secret"},
		{"user:Pw32-secret@localhost:6379", "Pw32-secret"},
		{"redis://user:Pw33-secret@127.0.0.1:1/0?may_lose_records=maybe", "Pw33-secret"},
		{"redis:user:Pw34-secret@localhost", "Pw34-secret"},
		{"etcd://user:Pw35-secret@127.0.0.1:1/p", "Pw35-secret"},
		{"etcd://user:Pw36-secret@host:notaport/p", "Pw36-secret"},
		{"etcds://:Pw37%2Fsecret@/p", "Pw37/secret"},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, tt.url)
		cancel()
		if err == nil {
			t.Errorf("Open(%q) opened", tt.url)
			continue
		}
		msg := err.Error()
		for _, s := range []string{tt.secret, url.QueryEscape(tt.secret), url.PathEscape(tt.secret), "secret"} {
			if strings.Contains(msg, s) {
				t.Errorf("Open(%q) error shows the password (%q): %s", tt.url, s, msg)
				break
			}
		}
	}
}

func TestOpenRealBackends(t *testing.T) {
	ctx := context.Background()
	for name, url := range map[string]func(t *testing.T) string{
		"redis":    func(t *testing.T) string { return "unix://" + testcluster.PackageRedis(t).Addr() + "?prefix=urltest:" },
		"postgres": func(t *testing.T) string { return testcluster.PackagePostgres(t).DSN() + "&tenure_table=url_leases" },
		"etcd": func(t *testing.T) string {
			return "etcd://" + strings.TrimPrefix(testcluster.PackageEtcd(t).Endpoint(), "http://") + "/urltest/"
		},
	} {
		t.Run(name, func(t *testing.T) {
			job := fmt.Sprintf("url-job-%d", time.Now().UnixNano()) // the server outlives one run
			st, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rec, rev, err := st.CompareAndSwap(ctx, job, 0, lease.Record[meta]{LeaseDuration: 15 * time.Second, Holder: "a", Token: 1, Metadata: meta{N: 7}})
			if err != nil {
				t.Fatal(err)
			}
			got, grev, err := st.Get(ctx, job)
			if err != nil || got.Holder != "a" || got.Metadata.N != 7 || grev != rev || rec.Holder != "a" {
				t.Fatalf("Get = %+v %d %v", got, grev, err)
			}
		})
	}
}

// tenure_table takes TABLE or SCHEMA.TABLE; a value with more dots was read
// as schema "a", table "b.c", and is now refused naming the option and the
// rule. Against the real server, so that the refusal is not a connection
// error.
func TestTenureTable(t *testing.T) {
	ctx := context.Background()
	dsn := testcluster.PackagePostgres(t).DSN()
	for _, bad := range []string{"a.b.c", "a..b", "a.", ".b", "s.t.u.v"} {
		_, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, dsn+"&tenure_table="+bad)
		if !errors.Is(err, storeurl.ErrBadURL) || !strings.Contains(err.Error(), "tenure_table") || !strings.Contains(err.Error(), "SCHEMA.TABLE") {
			t.Errorf("tenure_table=%s: error %v, want ErrBadURL naming tenure_table and the rule", bad, err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS urlschema"); err != nil {
		t.Fatal(err)
	}
	st, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, dsn+"&tenure_table=urlschema.url_leases")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	job := fmt.Sprintf("url-job-%d", time.Now().UnixNano())
	if _, _, err := st.CompareAndSwap(ctx, job, 0, lease.Record[meta]{LeaseDuration: 15 * time.Second, Holder: "a", Token: 1}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM urlschema.url_leases WHERE name = $1", job).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows in urlschema.url_leases: %d, %v", n, err)
	}
}

// A Redis key prefix with a brace is refused, naming the option.
func TestRedisPrefixWithBrace(t *testing.T) {
	addr := testcluster.PackageRedis(t).Addr()
	_, err := storeurl.Open[meta](context.Background(), &storeurl.Opener{}, "unix://"+addr+"?prefix=%7Bapp%7D:")
	if !errors.Is(err, redisstore.ErrInvalidOption) || !errors.Is(err, storeurl.ErrBadURL) || !strings.Contains(err.Error(), `prefix="{app}:"`) || !strings.Contains(err.Error(), "WithPrefix") {
		t.Errorf("prefix={app}: error %v, want ErrBadURL and redisstore.ErrInvalidOption naming the parameter and WithPrefix", err)
	}
}

func TestOpenKubernetes(t *testing.T) {
	k := testcluster.PackageKube(t)
	kubeconfig, err := k.WriteKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	ns := k.Namespace(t, "url")
	ctx := context.Background()
	st, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, "kubernetes://"+ns)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	job := fmt.Sprintf("url-job-%d", time.Now().UnixNano())
	if _, _, err := st.CompareAndSwap(ctx, job, 0, lease.Record[meta]{Holder: "a", Token: 1, LeaseDuration: 15e9, Metadata: meta{N: 3}}); err != nil {
		t.Fatal(err)
	}
	got, _, err := st.Get(ctx, job)
	if err != nil || got.Holder != "a" || got.Metadata.N != 3 {
		t.Fatalf("Get = %+v %v", got, err)
	}
}
