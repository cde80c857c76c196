package redisfence_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/fence/redisfence"
)

// A leader writes with the token of its term; a leader whose term has ended
// is refused once its successor has written.
func ExampleSet() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()

	// Tokens come from lead.Term.Token; these stand for two terms.
	var oldTerm, newTerm fence.Token = 1_700_000_000_000_001, 1_700_000_000_000_002

	_ = redisfence.Set(ctx, rdb, newTerm, "report:last-run", "2025-06-01", 0)
	err := redisfence.Set(ctx, rdb, oldTerm, "report:last-run", "2025-05-31", 0)
	if errors.Is(err, fence.ErrStaleToken) {
		fmt.Println("refused: a newer term has written")
	}
}
