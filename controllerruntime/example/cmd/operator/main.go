// Command operator runs the example operator (package example): a
// controller that runs only on the replica leading a Tenure election. It
// reads the cluster from KUBECONFIG or the in-cluster configuration.
//
//	go run ./example/cmd/operator -namespace default
//	go run ./example/cmd/operator -namespace default -store redis://localhost:6379/0
package main

import (
	"flag"
	"log/slog"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tenure-go/tenure/controllerruntime/example"
)

func main() {
	var o example.Options
	flag.StringVar(&o.Namespace, "namespace", "default", "the namespace watched, and the Lease's when -store is empty")
	flag.StringVar(&o.StoreURL, "store", "", "a store URL for storeurl (redis://, postgres://, etcd://, kubernetes://NS); empty: a Lease through kubestore")
	flag.StringVar(&o.ID, "id", os.Getenv("POD_NAME"), "this replica's identity (default: POD_NAME, else the host name)")
	flag.StringVar(&o.Probes, "probes", ":8081", "the address of /healthz and /readyz")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := ctrl.GetConfig()
	if err == nil {
		err = example.Run(ctrl.SetupSignalHandler(), log, cfg, o)
	}
	if err != nil {
		log.Error("operator stopped", "err", err)
		os.Exit(1)
	}
}
