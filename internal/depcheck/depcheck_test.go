package depcheck_test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const tenure = "github.com/tenure-go/tenure/"

// The client libraries of the stores, by the prefixes of their packages.
var (
	redisClient = []string{"github.com/redis/"}
	pgClient    = []string{"github.com/jackc/"}
	kubeClient  = []string{"k8s.io/", "sigs.k8s.io/"}
	etcdClient  = []string{"go.etcd.io/", "google.golang.org/grpc"}
)

// graph is the import graph of some packages and all they depend on.
type graph map[string][]string

// deps returns the import graph of pkgs, from go list -deps, offline.
func deps(t *testing.T, pkgs ...string) graph {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		g[f[0]] = f[1:]
	}
	return g
}

// pathTo returns a chain of imports from one of roots to pkg.
func (g graph) pathTo(roots []string, pkg string) []string {
	prev := map[string]string{}
	queue := slices.Clone(roots)
	seen := map[string]bool{}
	for _, r := range roots {
		seen[r] = true
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == pkg {
			chain := []string{p}
			for p != "" && !slices.Contains(roots, p) {
				p = prev[p]
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range g[p] {
			if !seen[q] {
				seen[q] = true
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

// forbidden returns, for each package of g that bad matches, how roots
// reach it.
func (g graph) forbidden(roots []string, bad func(pkg string) bool) []string {
	var out []string
	for p := range g {
		if bad(p) {
			out = append(out, strings.Join(g.pathTo(roots, p), " -> "))
		}
	}
	slices.Sort(out)
	return out
}

// prefixed returns a test of a package path against prefixes.
func prefixed(prefixes ...[]string) func(string) bool {
	all := slices.Concat(prefixes...)
	return func(p string) bool {
		return slices.ContainsFunc(all, func(pre string) bool { return strings.HasPrefix(p, pre) })
	}
}

// notStdOrTenure is true of a package outside the standard library and
// Tenure.
func notStdOrTenure(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return strings.Contains(first, ".") && !strings.HasPrefix(p, tenure)
}

// A program importing lead and one store builds only that store's client
// library (and lead and memstore, none at all).
func TestOneStoreBuildsNoOtherClientLibrary(t *testing.T) {
	for _, c := range []struct {
		store string
		bad   func(string) bool
	}{
		{"store/memstore", notStdOrTenure},
		{"store/redisstore", prefixed(pgClient, kubeClient, etcdClient)},
		{"store/pgstore", prefixed(redisClient, kubeClient, etcdClient)},
		{"store/kubestore", prefixed(redisClient, pgClient, etcdClient)},
		{"store/etcdstore", prefixed(redisClient, pgClient, kubeClient)},
		{"fence/redisfence", prefixed(pgClient, kubeClient, etcdClient)},
		{"fence/pgfence", prefixed(redisClient, kubeClient, etcdClient)},
	} {
		t.Run(c.store, func(t *testing.T) {
			roots := []string{tenure + "lead", tenure + c.store}
			if bad := deps(t, roots...).forbidden(roots, c.bad); len(bad) > 0 {
				t.Errorf("lead and %s build %d packages they should not:\n%s", c.store, len(bad), strings.Join(bad, "\n"))
			}
		})
	}
}

// The check sees a client library where there is one: storeurl opens
// every backend, so it builds them all.
func TestCheckSeesEveryClientOfStoreurl(t *testing.T) {
	roots := []string{tenure + "lead", tenure + "storeurl"}
	g := deps(t, roots...)
	for _, client := range [][]string{redisClient, pgClient, kubeClient, etcdClient} {
		bad := g.forbidden(roots, prefixed(client))
		if len(bad) == 0 {
			t.Errorf("no package of %v found in the dependencies of storeurl", client)
			continue
		}
		if !strings.HasPrefix(bad[0], tenure+"storeurl -> ") {
			t.Errorf("the import chain %q does not start at storeurl", bad[0])
		}
	}
	if bad := g.forbidden(roots, notStdOrTenure); len(bad) == 0 {
		t.Error("storeurl's dependencies show no package outside the standard library and Tenure")
	}
}
