// Package gocron shows wall-clock schedules ("every day at 02:00") run on
// the leader only, with gocron v2 and lead.Elector.Gate. It is a module of
// its own so that Tenure does not depend on gocron; docs/guide.md shows the
// body of Nightly as it is here (TestGuideShowsNightly checks it).
package gocron

import (
	"context"

	"github.com/go-co-op/gocron/v2"

	"github.com/tenure-go/tenure/fence"
	"github.com/tenure-go/tenure/lead"
)

// Nightly starts a scheduler that runs report every day at 02:00 on
// the replica whose elector e leads at that time, with the term's token in
// report's context (see fence.FromContext). opts are the scheduler's other
// options (a clock, say). Stop it with its Shutdown.
func Nightly[M any](e *lead.Elector[M], report func(ctx context.Context) error, opts ...gocron.SchedulerOption) (gocron.Scheduler, error) {
	// guide:begin
	opts = append(opts, gocron.WithDistributedElector(e.Gate())) // jobs run on the leader only
	s, err := gocron.NewScheduler(opts...)
	if err != nil {
		return nil, err
	}
	_, err = s.NewJob(
		gocron.DailyJob(1, gocron.NewAtTimes(gocron.NewAtTime(2, 0, 0))), // 02:00 in the scheduler's location (gocron.WithLocation; default time.Local)
		gocron.NewTask(func(ctx context.Context) error {
			t, ok := e.Term() // the Gate said this replica leads; the term may end meanwhile
			if !ok {
				return lead.ErrNotLeader
			}
			return report(fence.WithToken(ctx, t.Token)) // fence the writes with the token
		}),
	)
	if err != nil {
		return nil, err
	}
	s.Start()
	// guide:end
	return s, nil
}
