package storetest_test

import (
	"context"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
	"github.com/tenure-go/tenure/store/storetest"
)

// badLister lists a memstore's records wrongly, as variant says:
// "pattern" takes the prefix for a glob pattern, unescaped, as a SCAN
// MATCH or a LIKE built by pasting it would; "dropcorrupt" leaves out the
// records it cannot read.
type badLister struct {
	*memstore.Store[storetest.Meta]
	variant string
}

func (s badLister) List(ctx context.Context, prefix string) ([]store.Listed[storetest.Meta], error) {
	all, err := s.Store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []store.Listed[storetest.Meta]
	for _, x := range all {
		switch s.variant {
		case "pattern":
			if ok, _ := path.Match(prefix+"*", x.Name); !ok {
				continue
			}
		case "dropcorrupt":
			if !strings.HasPrefix(x.Name, prefix) || x.Err != nil {
				continue
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// The List check fails a listing that takes its prefix for a pattern, and
// one that leaves out a record it cannot read: run in a child process,
// since the failure is the point.
func TestListCatchesWrongListings(t *testing.T) {
	if v := os.Getenv("STORETEST_BADLIST"); v != "" {
		storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
			return badLister{memstore.New[storetest.Meta](), v}
		}, storetest.WithCorrupt(func(t *testing.T, st store.Store[storetest.Meta], name string) {
			if _, err := st.(badLister).PutRaw(name, lease.Record[[]byte]{Holder: "h", Token: 1, LeaseDuration: time.Second, Metadata: []byte("{")}); err != nil {
				t.Fatal(err)
			}
		}))
		return
	}
	for _, c := range []struct{ variant, want string }{
		{"pattern", `List(prefix ending in "?") listed`},
		{"dropcorrupt", "List(prefix with a corrupt record) listed"},
	} {
		t.Run(c.variant, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestListCatchesWrongListings$/^List$", "-test.v")
			cmd.Env = append(os.Environ(), "STORETEST_BADLIST="+c.variant)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store whose listing is wrong (%s):\n%s", c.variant, out)
			}
			for _, want := range []string{"--- FAIL: TestListCatchesWrongListings/List", c.want} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the child's output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
