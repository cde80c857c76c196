package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// errNoLeader is what scriptedStage answers when the script waits for a
// leader that the run would never get: the real demo would wait forever.
var errNoLeader = errors.New("no worker would start leading")

// scriptedStage plays the workers for handOver: leaders start in the order
// given, each only once the script stopped the one before. Every late
// write is refused.
type scriptedStage struct {
	leaders []int
	stops   []string // and late writes, in order
}

func (s *scriptedStage) nextLeader(ctx context.Context) (int, error) {
	if len(s.leaders) == 0 {
		return 0, errNoLeader
	}
	i := s.leaders[0]
	s.leaders = s.leaders[1:]
	return i, nil
}

func (s *scriptedStage) stop(i int, graceful bool) {
	how := "crash"
	if graceful {
		how = "graceful"
	}
	s.stops = append(s.stops, fmt.Sprintf("%d %s", i, how))
}

func (s *scriptedStage) lateWrite(i int) bool {
	s.stops = append(s.stops, fmt.Sprintf("late %d", i))
	return true
}

// The script stops leaders until it has shown a graceful stop and a crash,
// or until one worker is left, then ends with the leader it has: it never
// waits for a leader that cannot come. With 3 workers, when workers 1 and 3
// (both releasing) lead first, worker 2 is the last one and leads to the
// end. Once the successor of the first graceful stop leads, the stopped
// worker's late write is tried, once.
func TestHandOverEndsWithTheLastLeader(t *testing.T) {
	for _, tc := range []struct {
		n       int
		leaders []int
		stops   []string
		sum     summary
	}{
		{3, []int{0, 1, 2}, []string{"0 graceful", "late 0", "1 crash"}, summary{1, 1, 1}},
		{3, []int{1, 0, 2}, []string{"1 crash", "0 graceful", "late 0"}, summary{1, 1, 1}},
		{3, []int{0, 2, 1}, []string{"0 graceful", "late 0", "2 graceful"}, summary{2, 0, 1}},
		{3, []int{2, 0, 1}, []string{"2 graceful", "late 2", "0 graceful"}, summary{2, 0, 1}},
		{4, []int{0, 2, 1, 3}, []string{"0 graceful", "late 0", "2 graceful", "1 crash"}, summary{2, 1, 1}},
		{4, []int{1, 3, 0, 2}, []string{"1 crash", "3 crash", "0 graceful", "late 0"}, summary{1, 2, 1}},
		{5, []int{4, 1, 0}, []string{"4 graceful", "late 4", "1 crash"}, summary{1, 1, 1}},
	} {
		t.Run(fmt.Sprintf("%d workers %v", tc.n, tc.leaders), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &scriptedStage{leaders: slices.Clone(tc.leaders)}
				start := time.Now()
				sum, err := handOver(context.Background(), st, tc.n, time.Second)
				if err != nil {
					t.Fatalf("%d workers leading in order %v: %v after stopping %v", tc.n, tc.leaders, err, st.stops)
				}
				if sum != tc.sum {
					t.Errorf("%d workers leading in order %v: %+v, want %+v", tc.n, tc.leaders, sum, tc.sum)
				}
				if !slices.Equal(st.stops, tc.stops) {
					t.Errorf("%d workers leading in order %v: stops %v, want %v", tc.n, tc.leaders, st.stops, tc.stops)
				}
				if len(st.leaders) != 0 {
					t.Errorf("%d workers leading in order %v: ended before leaders %v", tc.n, tc.leaders, st.leaders)
				}
				// A step before each stop, half a step with the last leader.
				want := time.Duration(tc.sum.graceful+tc.sum.crashed)*time.Second + time.Second/2
				if took := time.Since(start); took != want {
					t.Errorf("%d workers leading in order %v: took %v, want %v", tc.n, tc.leaders, took, want)
				}
			})
		})
	}
}
