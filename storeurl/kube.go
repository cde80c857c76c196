package storeurl

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tenure-go/tenure/store/kubestore"
)

// openKube returns the opener of kubernetes:// URLs.
func openKube[M any](scheme string) (func(context.Context, *url.URL) (Store[M], error), bool) {
	if scheme != "kubernetes" && scheme != "k8s" {
		return nil, false
	}
	return openKubernetes[M], true
}

// openKubernetes opens kubernetes://NAMESPACE: Leases in NAMESPACE, with
// the in-cluster config when running in a pod, and otherwise the kubeconfig
// that KUBECONFIG (or ~/.kube/config) names. The query parameter context
// picks a kubeconfig context.
func openKubernetes[M any](_ context.Context, u *url.URL) (Store[M], error) {
	ns := u.Host
	if ns == "" || strings.Trim(u.Path, "/") != "" {
		return Store[M]{}, fmt.Errorf("%w: %s: want kubernetes://NAMESPACE", ErrBadURL, redacted(u))
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		overrides := &clientcmd.ConfigOverrides{CurrentContext: u.Query().Get("context")}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return Store[M]{}, fmt.Errorf("storeurl: no in-cluster config and no usable kubeconfig (set KUBECONFIG): %w", err)
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Store[M]{}, fmt.Errorf("storeurl: Kubernetes client: %w", err)
	}
	st, err := kubestore.New[M](client, ns)
	if err != nil {
		return Store[M]{}, err
	}
	return Store[M]{Store: st, Close: func() error { return nil }}, nil
}
