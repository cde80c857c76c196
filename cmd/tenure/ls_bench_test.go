package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
	"github.com/tenure-go/tenure/storeurl"
)

// lsBenchNames is how many elections BenchmarkLs lists.
const lsBenchNames = 10_000

// BenchmarkLs times tenure ls, run in this process as the command runs
// (open the store from its URL, list, sort, print the table, close), on a
// store of each backend holding lsBenchNames held records with a little
// metadata. Filling the store is not timed.
func BenchmarkLs(b *testing.B) {
	backends := []struct {
		name string
		url  func(b *testing.B) (url string, fill store.Store[rawMeta])
	}{
		{"memstore", func(b *testing.B) (string, store.Store[rawMeta]) {
			return "memory://ls-bench", nil
		}},
		{"redis", func(b *testing.B) (string, store.Store[rawMeta]) {
			addr := testcluster.PackageRedis(b).Addr()
			if strings.HasPrefix(addr, "/") {
				return "unix://" + addr + "?prefix=lsbench:", nil
			}
			return "redis://" + addr + "/0?prefix=lsbench:", nil
		}},
		{"postgres", func(b *testing.B) (string, store.Store[rawMeta]) {
			return testcluster.PackagePostgres(b).DSN() + "&tenure_table=ls_bench", nil
		}},
		{"kubernetes", func(b *testing.B) (string, store.Store[rawMeta]) {
			k := testcluster.PackageKube(b)
			kubeconfig, err := k.WriteKubeconfig()
			if err != nil {
				b.Fatal(err)
			}
			b.Setenv("KUBECONFIG", kubeconfig)
			ns := k.Namespace(b, "ls-bench")
			// Filled through a client without client-go's rate limit.
			st, err := kubestore.New[rawMeta](k.Client(b).CoordinationV1(), ns)
			if err != nil {
				b.Fatal(err)
			}
			return "kubernetes://" + ns, st
		}},
		{"etcd", func(b *testing.B) (string, store.Store[rawMeta]) {
			return "etcd://" + strings.TrimPrefix(testcluster.PackageEtcd(b).Endpoint(), "http://") + "/ls-bench/", nil
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			o := &storeurl.Opener{}
			ctx := context.WithValue(b.Context(), openerKey{}, o)
			url, fill := be.url(b)
			if fill == nil {
				st, err := storeurl.Open[rawMeta](ctx, o, url)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				fill = st
			}
			fillForLs(b, ctx, fill, lsBenchNames)
			var out strings.Builder
			if code := run(ctx, []string{"ls", "--store", url, "--sort", "renewed"}, &out, &out); code != 0 {
				b.Fatalf("exit %d: %s", code, out.String())
			}
			if rows := strings.Count(out.String(), "\n") - 1; rows != lsBenchNames {
				b.Fatalf("tenure ls printed %d rows, want %d", rows, lsBenchNames)
			}
			for b.Loop() {
				if code := run(ctx, []string{"ls", "--store", url, "--sort", "renewed"}, io.Discard, io.Discard); code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/ls")
		})
	}
}

// fillForLs creates n elections in st, from 32 goroutines, unless an
// earlier run (-count) did.
func fillForLs(b *testing.B, ctx context.Context, st store.Store[rawMeta], n int) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	now := time.Now()
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				rec := lease.Record[rawMeta]{
					Holder: fmt.Sprintf("worker-%d", i%7), Token: 1, AcquiredAt: now, RenewedAt: now,
					LeaseDuration: 15 * time.Second, Metadata: rawMeta(fmt.Sprintf(`{"addr":"10.0.%d.%d:8080"}`, i/256%256, i%256)),
				}
				_, _, err := st.CompareAndSwap(ctx, fmt.Sprintf("ls-bench-%05d", i), 0, rec)
				if err != nil && !errors.Is(err, store.ErrConflict) { // a conflict: filled by an earlier run
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
