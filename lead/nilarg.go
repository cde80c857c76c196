package lead

import "fmt"

// usable returns an error wrapping ErrNilArgument, for method op, when e is
// nil or was not made by New.
func (e *Elector[M]) usable(op string) error {
	switch {
	case e == nil:
		return fmt.Errorf("%w: %s: the *Elector is nil (make one with New)", ErrNilArgument, op)
	case e.stopped == nil:
		return fmt.Errorf("%w: %s: the Elector was not made by New", ErrNilArgument, op)
	}
	return nil
}

// closed returns a closed channel.
func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
