package example

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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

// The annotations Stamper writes.
const (
	// TokenAnnotation holds the token of the term that wrote last.
	TokenAnnotation = "example.tenure-go.dev/token"
	// KeysAnnotation holds the number of keys of the ConfigMap.
	KeysAnnotation = "example.tenure-go.dev/keys"
)

// meta is what the leader publishes in its record: who to ask.
type meta struct {
	Pod string `json:"pod"`
}

// Options are the operator's settings (the command's flags).
type Options struct {
	// Namespace is the namespace watched, and the Lease's when StoreURL is
	// empty.
	Namespace string
	// StoreURL names the election's store for storeurl (redis://,
	// postgres://, etcd://, kubernetes://NS); empty: a Lease in Namespace
	// through kubestore.
	StoreURL string
	// ID is this replica's identity; empty: the host name.
	ID string
	// Probes is the address of /healthz and /readyz ("0": none).
	Probes string
}

// Run runs the operator on the cluster cfg until ctx ends (it returns nil,
// the lease released) or its term ends under it (an error wrapping
// controllerruntime.ErrLeadershipLost: exit, and let the Deployment
// restart the pod). A nil log discards.
func Run(ctx context.Context, log *slog.Logger, cfg *rest.Config, o Options) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: Run: ctx is nil", controllerruntime.ErrNilArgument)
	case cfg == nil:
		return fmt.Errorf("%w: Run: cfg is nil", controllerruntime.ErrNilArgument)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	namespace, id := o.Namespace, o.ID
	st, closeStore, err := openStore(ctx, cfg, namespace, o.StoreURL)
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
		HealthProbeBindAddress: o.Probes,
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
		Complete(&Stamper{Client: mgr.GetClient(), Log: log})
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

// Stamper writes the number of keys of each ConfigMap into an annotation,
// with the token of the term it runs in. The write is fenced: it is an
// update at the resourceVersion read (a compare-and-swap), and it is not
// made when the object carries a token larger than this term's, so a
// replica that lost its term can never overwrite a later leader's write.
type Stamper struct {
	// Client reads and writes ConfigMaps (the manager's).
	Client client.Client
	// Log receives a line per write; nil discards.
	Log *slog.Logger
}

// Reconcile stamps one ConfigMap.
func (s *Stamper) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if s == nil || s.Client == nil {
		return reconcile.Result{}, fmt.Errorf("%w: Stamper.Reconcile: the Stamper or its Client is nil", controllerruntime.ErrNilArgument)
	}
	token, ok := fence.FromContext(ctx) // the term's, through the controller's context
	if !ok {
		return reconcile.Result{}, fence.ErrNoToken
	}
	var cm corev1.ConfigMap
	if err := s.Client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	keys := strconv.Itoa(len(cm.Data) + len(cm.BinaryData))
	if seen, err := strconv.ParseUint(cm.Annotations[TokenAnnotation], 10, 64); err == nil && fence.Token(seen) > token {
		return reconcile.Result{}, fmt.Errorf("%w: %s carries token %d, this term's is %d", fence.ErrStaleToken, req.NamespacedName, seen, token)
	}
	if cm.Annotations[KeysAnnotation] == keys && cm.Annotations[TokenAnnotation] == strconv.FormatUint(uint64(token), 10) {
		return reconcile.Result{}, nil
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[KeysAnnotation] = keys
	cm.Annotations[TokenAnnotation] = strconv.FormatUint(uint64(token), 10)
	// Update sends the resourceVersion read: a conflict if anyone wrote
	// since, and the controller retries (with backoff) from a fresh read.
	if err := s.Client.Update(ctx, &cm); err != nil {
		return reconcile.Result{}, err
	}
	if s.Log != nil {
		s.Log.Info("stamped", "configmap", req.NamespacedName, "keys", keys, "token", token)
	}
	return reconcile.Result{}, nil
}
