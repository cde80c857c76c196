// Command example is an operator whose controller runs only on the replica
// that leads a Tenure election, on a Kubernetes Lease or on any store
// storeurl opens. Its controller stamps every ConfigMap of its namespace
// with the number of its keys, fenced by the term's token: a replica whose
// term has ended cannot overwrite what a later leader wrote.
//
//	go run ./example -namespace default                      # a Lease "example-operator" in default, through kubestore
//	go run ./example -namespace default -store redis://localhost:6379/0
//	go run ./example -namespace default -store 'postgres://user:pass@localhost:5432/app'
//
// Run several at once (each with its own -id, or POD_NAME) and stop the
// leader: another takes over at once after a clean stop (SIGTERM), or once
// the lease has expired after a crash. It reads the cluster from
// KUBECONFIG or the in-cluster configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tenure-go/tenure/controllerruntime"
	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/kubestore"
	"github.com/tenure-go/tenure/storeurl"
)

// The annotations the controller writes.
const (
	tokenAnnotation = "example.tenure-go.dev/token"
	keysAnnotation  = "example.tenure-go.dev/keys"
)

// meta is what the leader publishes in its record: who to ask.
type meta struct {
	Pod string `json:"pod"`
}

func main() {
	namespace := flag.String("namespace", "default", "the namespace watched, and the Lease's when -store is empty")
	storeURL := flag.String("store", "", "a store URL for storeurl (redis://, postgres://, etcd://, kubernetes://NS); empty: a Lease through kubestore")
	id := flag.String("id", os.Getenv("POD_NAME"), "this replica's identity (default: POD_NAME, else the host name)")
	probes := flag.String("probes", ":8081", "the address of /healthz and /readyz")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := ctrl.GetConfig()
	if err == nil {
		err = run(ctrl.SetupSignalHandler(), log, cfg, options{namespace: *namespace, storeURL: *storeURL, id: *id, probes: *probes})
	}
	if err != nil {
		log.Error("operator stopped", "err", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	namespace, storeURL, id, probes string
}

// run runs the operator until ctx ends or its term ends under it.
func run(ctx context.Context, log *slog.Logger, cfg *rest.Config, o options) error {
	namespace, id := o.namespace, o.id
	st, closeStore, err := openStore(ctx, cfg, namespace, o.storeURL)
	if err != nil {
		return err
	}
	defer closeStore()

	var opts []lead.Option
	if id != "" {
		opts = append(opts, lead.WithIdentity(id)) // else lead.New takes the host name
	}
	opts = append(opts, lead.WithLogger(log))
	e, err := lead.New("example-operator", st, opts...)
	if err != nil {
		return err
	}
	if err := e.SetMetadata(meta{Pod: e.Identity()}); err != nil {
		return err
	}
	x, err := controllerruntime.NewManager(cfg, manager.Options{
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		HealthProbeBindAddress: o.probes,
	}, e)
	if err != nil {
		return err
	}
	mgr := x.Manager() // not the manager NewManager made: this one gates controllers
	// Ready once the elector has talked to its store; Err says why it
	// cannot lead (a rollback of the store, tokens used up).
	if err := mgr.AddReadyzCheck("tenure", func(_ *http.Request) error {
		select {
		case <-e.Ready():
			return e.Err()
		default:
			return errors.New("the elector has not reached its store yet")
		}
	}); err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}).
		Complete(&stamper{client: mgr.GetClient(), log: log})
	if err != nil {
		return err
	}
	go func() {
		<-x.Elected()
		log.Info("leading: the controller runs here", "identity", e.Identity())
	}()
	// Start returns nil after SIGTERM (the lease released), or an error
	// wrapping controllerruntime.ErrLeadershipLost when the term ended
	// under it: exit and let the Deployment restart the pod.
	return mgr.Start(ctx)
}

// openStore opens the election's store: a Lease in namespace through
// kubestore, or the store storeURL names.
func openStore(ctx context.Context, cfg *rest.Config, namespace, storeURL string) (store.Store[meta], func(), error) {
	if storeURL == "" {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		st, err := kubestore.New[meta](cs.CoordinationV1(), namespace)
		return st, func() {}, err
	}
	st, err := storeurl.Open[meta](ctx, nil, storeURL)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { _ = st.Close() }, nil
}

// stamper writes the number of keys of each ConfigMap into an annotation,
// with the token of the term it runs in. The write is fenced: it is an
// update at the resourceVersion read (a compare-and-swap), and it is not
// made when the object carries a token larger than this term's, so a
// replica that lost its term can never overwrite a later leader's write.
type stamper struct {
	client client.Client
	log    *slog.Logger
}

// Reconcile stamps one ConfigMap.
func (s *stamper) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	token, ok := fence.FromContext(ctx) // the term's, through the controller's context
	if !ok {
		return reconcile.Result{}, fence.ErrNoToken
	}
	var cm corev1.ConfigMap
	if err := s.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	keys := strconv.Itoa(len(cm.Data) + len(cm.BinaryData))
	if seen, err := strconv.ParseUint(cm.Annotations[tokenAnnotation], 10, 64); err == nil && fence.Token(seen) > token {
		return reconcile.Result{}, fmt.Errorf("%w: %s carries token %d, this term's is %d", fence.ErrStaleToken, req.NamespacedName, seen, token)
	}
	if cm.Annotations[keysAnnotation] == keys && cm.Annotations[tokenAnnotation] == strconv.FormatUint(uint64(token), 10) {
		return reconcile.Result{}, nil
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[keysAnnotation] = keys
	cm.Annotations[tokenAnnotation] = strconv.FormatUint(uint64(token), 10)
	// Update sends the resourceVersion read: a conflict if anyone wrote
	// since, and the controller retries (with backoff) from a fresh read.
	if err := s.client.Update(ctx, &cm); err != nil {
		return reconcile.Result{}, err
	}
	s.log.Info("stamped", "configmap", req.NamespacedName, "keys", keys, "token", token)
	return reconcile.Result{}, nil
}
