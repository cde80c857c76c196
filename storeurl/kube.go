package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tenure-go/tenure/store/kubestore"
)

// openKubernetes opens kubernetes://NAMESPACE: Leases in NAMESPACE, with
// the in-cluster config when running in a pod, and otherwise the kubeconfig
// that KUBECONFIG (or ~/.kube/config) names. The query parameter context
// picks a kubeconfig context. Credentials come from that config, never from
// the URL.
func openKubernetes[M any](_ context.Context, u *url.URL, raw string) (Store[M], error) {
	ns := u.Host
	switch {
	case u.User != nil:
		return nil, fmt.Errorf("%w: %s: kubernetes:// takes no user or password (credentials come from the in-cluster config or the kubeconfig)", ErrBadURL, display(raw))
	case ns == "" || strings.Trim(u.Path, "/") != "":
		return nil, fmt.Errorf("%w: %s: want kubernetes://NAMESPACE", ErrBadURL, display(raw))
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		overrides := &clientcmd.ConfigOverrides{CurrentContext: u.Query().Get("context")}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("%w: no in-cluster config and no usable kubeconfig (set KUBECONFIG): %w", ErrConnect, err)
		}
	}
	// The coordination/v1 client alone, not a whole clientset: Leases are
	// all the store needs, and every program using storeurl (the tenure
	// command among them) then links no other API group's client.
	client, err := coordinationclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: Kubernetes client: %w", ErrConnect, err)
	}
	st, err := kubestore.New[M](client, ns)
	if err != nil {
		return nil, err
	}
	return kubeStore[M]{st}, nil
}

// kubeStore is a Kubernetes store opened from a URL: every method of
// kubestore's (Watch included), MayLoseRecords, and Close.
type kubeStore[M any] struct{ *kubestore.Store[M] }

// Close does nothing: the client holds no connection that needs closing.
func (kubeStore[M]) Close() error { return nil }

// MayLoseRecords is false: the API server keeps Leases in etcd.
func (s kubeStore[M]) MayLoseRecords() bool { return mayLose(s.Store, false) }
