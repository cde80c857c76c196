package etcdfence_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/etcdfence"
)

// A leader writes with the token of its term; a leader whose term has ended
// is refused once its successor has written.
func ExamplePut() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"localhost:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	// Tokens come from lead.Term.Token; these stand for two terms.
	var oldTerm, newTerm fence.Token = 41, 42

	_ = etcdfence.Put(ctx, cli, newTerm, "report/last-run", "2025-06-01")
	err = etcdfence.Put(ctx, cli, oldTerm, "report/last-run", "2025-05-31")
	if errors.Is(err, fence.ErrStaleToken) {
		fmt.Println("refused: a newer term has written")
	}
}
