package storeurl

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-go/tenure/store/etcdstore"
)

// openEtcd opens etcd://[USER:PASS@]HOST:PORT[,HOST:PORT...][/PREFIX] and
// etcds:// (TLS, verified against the system's roots). The path, when not
// empty, is the key prefix (etcd://db:2379/myapp/ keeps records under
// "myapp/leases/"); without one the prefix is etcdstore.DefaultPrefix.
// ?may_lose_records=true says the cluster may be restored from a snapshot
// (see docs/backends/etcd.md). A port is required: etcd has no port every
// deployment uses (2379 is the custom).
func openEtcd[M any](ctx context.Context, u *url.URL, raw string) (Store[M], error) {
	if u.Host == "" {
		return nil, fmt.Errorf("%w: %s: the host is empty: want %s://HOST:PORT[/PREFIX]", ErrBadURL, display(raw), u.Scheme)
	}
	var endpoints []string
	for _, hp := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("%w: %s: each address must be HOST:PORT (etcd listens on 2379 by custom)", ErrBadURL, display(raw))
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return nil, fmt.Errorf("%w: %s: port %q is not a number in [1, 65535]", ErrBadURL, display(raw), port)
		}
		scheme := "http://"
		if u.Scheme == "etcds" {
			scheme = "https://"
		}
		endpoints = append(endpoints, scheme+net.JoinHostPort(host, port))
	}
	q := u.Query()
	var opts []etcdstore.Option
	if prefix := strings.TrimPrefix(u.Path, "/"); prefix != "" {
		opts = append(opts, etcdstore.WithPrefix(prefix))
	}
	if v := q.Get("may_lose_records"); v != "" {
		may, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: may_lose_records=%q is not a boolean (true or false)", ErrBadURL, display(raw), v)
		}
		opts = append(opts, etcdstore.WithMayLoseRecords(may))
	}
	q.Del("may_lose_records")
	if len(q) > 0 {
		return nil, fmt.Errorf("%w: %s: unknown query parameters (etcd:// takes only may_lose_records)", ErrBadURL, display(raw))
	}
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	if u.Scheme == "etcds" {
		cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: etcd at %s: %w", ErrConnect, display(raw), err)
	}
	st, err := etcdstore.New[M](client, opts...)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	// One read under the prefix: it reaches the cluster, and proves the
	// user may read there.
	// It is bounded by DialTimeout: the client retries an unreachable
	// cluster for as long as ctx lasts.
	probe, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	key, _ := st.Key("x")
	if _, err := client.Get(probe, strings.TrimSuffix(key, "x"), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w: etcd at %s: %w", ErrConnect, display(raw), err)
	}
	return etcdStore[M]{Store: st, client: client}, nil
}

// etcdStore is an etcd store opened from a URL: every method of
// etcdstore's (Watch and MayLoseRecords included), and Close.
type etcdStore[M any] struct {
	*etcdstore.Store[M]
	client *clientv3.Client
}

// Close closes the etcd client.
func (s etcdStore[M]) Close() error { return s.client.Close() }
