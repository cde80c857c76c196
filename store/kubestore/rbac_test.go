package kubestore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
	"github.com/tenure-go/tenure/store/storetest"
)

// minimalVerbs is what the Store needs on leases: the Role of the
// documentation.
var minimalVerbs = []string{"get", "create", "update", "watch"}

// grant creates a Role with verbs on leases in ns and binds user to it.
func grant(t *testing.T, admin kubernetes.Interface, ns, user string, verbs []string) {
	t.Helper()
	c := ctx(t)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"coordination.k8s.io"},
			Resources: []string{"leases"},
			Verbs:     verbs,
		}},
	}
	if _, err := admin.RbacV1().Roles(ns).Create(c, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(c, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// grantNamed creates a Role with verbs on the leases names in ns and binds
// user to it.
func grantNamed(t *testing.T, admin kubernetes.Interface, ns, user string, names, verbs []string) {
	t.Helper()
	c := ctx(t)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{"coordination.k8s.io"},
			Resources:     []string{"leases"},
			ResourceNames: names,
			Verbs:         verbs,
		}},
	}
	if _, err := admin.RbacV1().Roles(ns).Create(c, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(c, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// awaitAllowedName is awaitAllowed for the Lease name.
func awaitAllowedName(t *testing.T, client kubernetes.Interface, ns, verb, name string) {
	t.Helper()
	c := ctx(t)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(c, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Name: name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed {
			return
		}
		select {
		case <-c.Done():
			t.Fatalf("%s on lease %s is still not allowed", verb, name)
		case <-tick.C:
		}
	}
}

// awaitAllowed waits until the authorizer, which learns of new Roles
// through an informer, lets user do verb on leases in ns. It asks the
// server (a SelfSubjectAccessReview): there is no event to wait for.
func awaitAllowed(t *testing.T, client kubernetes.Interface, ns, verb string) {
	t.Helper()
	c := ctx(t)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(c, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: "coordination.k8s.io", Resource: "leases",
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed {
			return
		}
		select {
		case <-c.Done():
			t.Fatalf("%s on leases is still not allowed", verb)
		case <-tick.C:
		}
	}
}

// The Store works under a user bound to exactly the minimal Role (get,
// create, update, watch; no list, no delete), save List, which needs
// list, and fails with a clear error under a Role without update.
func TestRBAC(t *testing.T) {
	k := testcluster.NewKube(t, testcluster.KubeOptions{RBAC: true, Users: []string{"tenure", "tenure-no-update", "tenure-named"}})
	admin := k.Client(t)
	ns := k.Namespace(t, "rbac")
	grant(t, admin, ns, "tenure", minimalVerbs)
	grant(t, admin, ns, "tenure-no-update", []string{"get", "create", "watch"})

	user, err := kubernetes.NewForConfig(k.UserConfig("tenure"))
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range minimalVerbs {
		awaitAllowed(t, user, ns, verb)
	}

	t.Run("MinimalRole", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store[storetest.Meta] {
			return newStore[storetest.Meta](t, user, ns)
		}, storetest.WithoutList[storetest.Meta]())
	})

	t.Run("NoList", func(t *testing.T) {
		// An elector never lists; listing (tenure ls) needs "list", and
		// without it List names the verb.
		_, err := user.CoordinationV1().Leases(ns).List(ctx(t), metav1.ListOptions{})
		if err == nil {
			t.Fatal("the minimal Role allows list")
		}
		_, err = newStore[meta](t, user, ns).List(ctx(t), "")
		if !errors.Is(err, kubestore.ErrForbidden) || !strings.Contains(err.Error(), `refused "list"`) {
			t.Fatalf("List under the minimal Role: %v; want ErrForbidden naming \"list\"", err)
		}
	})

	t.Run("RoleByName", func(t *testing.T) {
		// A Role restricted by resourceNames allows the watch of one
		// Lease (a metadata.name field selector), not of the namespace:
		// Watch falls back to a watch per name.
		admin := newStore[meta](t, admin, ns)
		c := ctx(t)
		_, rev, err := admin.CompareAndSwap(c, "named", 0, record("pod-a", 1))
		if err != nil {
			t.Fatal(err)
		}
		grantNamed(t, k.Client(t), ns, "tenure-named", []string{"named"}, []string{"get", "update", "watch"})
		named, err := kubernetes.NewForConfig(k.UserConfig("tenure-named"))
		if err != nil {
			t.Fatal(err)
		}
		awaitAllowedName(t, named, ns, "watch", "named")
		if _, err := named.CoordinationV1().Leases(ns).Watch(c, metav1.ListOptions{}); err == nil {
			t.Fatal("a Role restricted by resourceNames allows watching the namespace")
		}
		wctx, cancel := context.WithCancel(c)
		defer cancel()
		// On a Store of each kind of watch: the second watch goes
		// straight to a per-name watch (WatchFunc's is then served by a
		// goroutine).
		stores := map[bool]*kubestore.Store[meta]{false: newStore[meta](t, named, ns), true: newStore[meta](t, named, ns)}
		for _, viaFunc := range []bool{false, false, true, true} {
			ch, err := testcluster.WatchChan(t, wctx, stores[viaFunc], "named", viaFunc)
			if err != nil {
				t.Fatalf("Watch under a Role by name: %v", err)
			}
			if ev := recv(t, ch); ev.Revision != rev {
				t.Fatalf("first event %+v, want revision %d", ev, rev)
			}
			next := record("pod-b", 2)
			if _, rev, err = admin.CompareAndSwap(c, "named", rev, next); err != nil {
				t.Fatal(err)
			}
			if ev := recv(t, ch); ev.Revision != rev || ev.Record.Holder != "pod-b" {
				t.Fatalf("event %+v, want revision %d", ev, rev)
			}
		}
	})

	t.Run("WithoutUpdate", func(t *testing.T) {
		limited, err := kubernetes.NewForConfig(k.UserConfig("tenure-no-update"))
		if err != nil {
			t.Fatal(err)
		}
		awaitAllowed(t, limited, ns, "create")
		st := newStore[meta](t, limited, ns)
		c := ctx(t)
		held, rev, err := st.CompareAndSwap(c, "job", 0, record("pod-a", 1))
		if err != nil {
			t.Fatalf("create under a Role with create: %v", err)
		}
		held.RenewedAt = time.Now()
		_, _, err = st.CompareAndSwap(c, "job", rev, held)
		if !errors.Is(err, kubestore.ErrForbidden) || !strings.Contains(err.Error(), `"update"`) {
			t.Fatalf("renewal under a Role without update: %v; want ErrForbidden naming \"update\"", err)
		}
		t.Logf("the error: %v", err)
		// Watch and Get still work.
		if _, _, err := st.Get(c, "job"); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(c)
		defer cancel()
		ch, err := st.Watch(wctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		if ev := recv(t, ch); ev.Revision != rev {
			t.Fatalf("watch: %+v", ev)
		}
	})
}
