package fence_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenure-go/tenure/fence"
)

// A resource guarded by a Register refuses the write of a leader whose term
// has ended once the next leader has written.
func ExampleRegister() {
	var guard fence.Register
	var value string
	write := func(ctx context.Context, v string) error {
		return guard.DoContext(ctx, func() error { value = v; return nil })
	}

	oldLeader := fence.WithToken(context.Background(), 7)
	newLeader := fence.WithToken(context.Background(), 8)

	fmt.Println(write(oldLeader, "from term 7"))
	fmt.Println(write(newLeader, "from term 8"))
	err := write(oldLeader, "late write from term 7")
	fmt.Println(errors.Is(err, fence.ErrStaleToken), value)
	// Output:
	// <nil>
	// <nil>
	// true from term 8
}
