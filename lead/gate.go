package lead

import (
	"context"
	"fmt"
)

// Gate adapts an Elector to schedulers that ask "may this instance run the
// job now?" through a method IsLeader(context.Context) error. gocron v2's
// Elector interface has exactly that method, so a Gate can be passed to
// gocron.WithDistributedElector without Tenure importing gocron.
type Gate[M any] struct{ e *Elector[M] }

// Gate returns a Gate over e.
func (e *Elector[M]) Gate() Gate[M] { return Gate[M]{e: e} }

// IsLeader returns nil if the elector leads now, ctx's error if ctx has
// ended, and an error wrapping ErrNotLeader otherwise. A nil ctx, and a
// Gate over a nil Elector (the zero Gate, say) or one not made by New, get
// an error wrapping ErrNilArgument.
func (g Gate[M]) IsLeader(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: Gate.IsLeader: ctx is nil", ErrNilArgument)
	}
	if err := g.e.usable("Gate.IsLeader"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if g.e.IsLeader() {
		return nil
	}
	return fmt.Errorf("%w: %s does not lead %q", ErrNotLeader, g.e.id, g.e.name)
}
