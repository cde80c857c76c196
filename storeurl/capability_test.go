package storeurl_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/etcdstore"
	"github.com/tenure-go/tenure/store/kubestore"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/pgstore"
	"github.com/tenure-go/tenure/store/redisstore"
	"github.com/tenure-go/tenure/storeurl"
)

// TestOpenKeepsEveryCapability opens a store of every scheme against a real
// server and looks at it as lead.New does, as a plain store.Store: it
// watches (and the watch is the backend's: it reports a write), it says
// whether it may lose records as its backend does, and it has every method
// of the backend's own store type, so that optional interfaces added to a
// backend later reach the elector too.
func TestOpenKeepsEveryCapability(t *testing.T) {
	redisType := reflect.TypeFor[*redisstore.Store[meta]]()
	tests := []struct {
		name    string
		url     func(t *testing.T) string
		backend reflect.Type
		lossy   bool
	}{
		{"memory", func(*testing.T) string { return "memory://caps" }, reflect.TypeFor[*memstore.Store[meta]](), false},
		{"unix", func(t *testing.T) string { return "unix://" + testcluster.PackageRedis(t).Addr() }, redisType, true},
		{"unix persistent", func(t *testing.T) string {
			return "unix://" + testcluster.PackageRedis(t).Addr() + "?may_lose_records=false&prefix=caps:"
		}, redisType, false},
		{"redis", func(t *testing.T) string {
			return "redis://" + proxy(t, testcluster.PackageRedis(t).Addr(), nil) + "/0"
		}, redisType, true},
		{"rediss", func(t *testing.T) string {
			return "rediss://" + proxy(t, testcluster.PackageRedis(t).Addr(), selfSigned(t)) + "/0?skip_verify=true"
		}, redisType, true},
		{"postgres", func(t *testing.T) string {
			return testcluster.PackagePostgres(t).DSN() + "&tenure_table=caps_leases"
		}, reflect.TypeFor[*pgstore.Store[meta]](), false},
		{"etcd", func(t *testing.T) string {
			return "etcd://" + strings.TrimPrefix(testcluster.PackageEtcd(t).Endpoint(), "http://") + "/caps/"
		}, reflect.TypeFor[*etcdstore.Store[meta]](), false},
		{"etcd restored from backups", func(t *testing.T) string {
			return "etcd://" + strings.TrimPrefix(testcluster.PackageEtcd(t).Endpoint(), "http://") + "/caps/?may_lose_records=true"
		}, reflect.TypeFor[*etcdstore.Store[meta]](), true},
		{"kubernetes", func(t *testing.T) string {
			k := testcluster.PackageKube(t)
			kubeconfig, err := k.WriteKubeconfig()
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("KUBECONFIG", kubeconfig)
			return "kubernetes://" + k.Namespace(t, "caps")
		}, reflect.TypeFor[*kubestore.Store[meta]](), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			opened, err := storeurl.Open[meta](ctx, &storeurl.Opener{}, tt.url(t))
			if err != nil {
				t.Fatal(err)
			}
			defer opened.Close()
			var st store.Store[meta] = opened // what lead.New gets

			l, ok := st.(store.Lossy)
			if !ok {
				t.Fatalf("%T does not implement store.Lossy", st)
			}
			if got := l.MayLoseRecords(); got != tt.lossy {
				t.Errorf("MayLoseRecords() = %v, want %v", got, tt.lossy)
			}
			got := reflect.TypeOf(st)
			for i := range tt.backend.NumMethod() {
				m := tt.backend.Method(i)
				have, ok := got.MethodByName(m.Name)
				if !ok {
					t.Errorf("%v lacks %s of %v", got, m.Name, tt.backend)
					continue
				}
				// Compare without the receiver.
				if a, b := have.Type.NumIn(), m.Type.NumIn(); a != b || !sameSignature(have.Type, m.Type) {
					t.Errorf("%v.%s is %v, the backend's is %v", got, m.Name, have.Type, m.Type)
				}
			}

			w, ok := st.(store.Watcher[meta])
			if !ok {
				t.Fatalf("%T does not implement store.Watcher", st)
			}
			job := fmt.Sprintf("caps-%d", time.Now().UnixNano())
			events, err := w.Watch(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			if ev := testcluster.NextEvent(t, events, 30*time.Second); !ev.Absent {
				t.Fatalf("first event %+v, want absent", ev)
			}
			if _, _, err := st.CompareAndSwap(ctx, job, 0, lease.Record[meta]{Holder: "a", Token: 1, LeaseDuration: time.Second, Metadata: meta{N: 5}}); err != nil {
				t.Fatal(err)
			}
			if ev := testcluster.NextEvent(t, events, 30*time.Second); ev.Record.Holder != "a" || ev.Record.Metadata.N != 5 {
				t.Fatalf("watch event %+v, want a's record", ev)
			}
		})
	}
}

// sameSignature compares two method types of different receivers.
func sameSignature(a, b reflect.Type) bool {
	if a.NumOut() != b.NumOut() || a.IsVariadic() != b.IsVariadic() {
		return false
	}
	for i := 1; i < a.NumIn(); i++ {
		if a.In(i) != b.In(i) {
			return false
		}
	}
	for i := range a.NumOut() {
		if a.Out(i) != b.Out(i) {
			return false
		}
	}
	return true
}

// proxy forwards a loopback TCP port to the Unix socket sock, terminating
// TLS first when cfg is set, and returns the port's address: a redis:// or
// rediss:// URL for the test's Redis, which listens on a socket only.
func proxy(t *testing.T, sock string, cfg *tls.Config) string {
	t.Helper()
	var l net.Listener
	var err error
	if cfg != nil {
		l, err = tls.Listen("tcp", "127.0.0.1:0", cfg)
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("unix", sock)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
	return l.Addr().String()
}

// selfSigned returns a TLS server config with a fresh self-signed
// certificate for 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}
