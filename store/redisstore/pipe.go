package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/internal/batch"
)

// pipeLimit is how many pipelines a Store has in flight at once. Calls made
// while they are all out wait for the next, which takes every call waiting:
// idle, each call goes out alone at once; under load (a Group renewing
// thousands of names) a round trip carries many, which saves the system
// calls, the connections and the goroutines of the others.
const pipeLimit = 2

// pipeCall is one command sent through a Store's pipelines: the compare-
// and-swap script when script is set, otherwise an HGETALL of key.
type pipeCall struct {
	script *redis.Script
	keys   []string
	args   []any
	key    string
}

// newPipe returns the batch runner of a Store on client.
func newPipe(client redis.UniversalClient) *batch.Runner[pipeCall, redis.Cmder] {
	return batch.New(pipeLimit, func(ctx context.Context, calls []pipeCall) []batch.Answer[redis.Cmder] {
		return runPipe(ctx, client, calls)
	})
}

// runPipe sends calls in one pipeline (not a transaction: each command
// stands alone, as if sent by itself) and returns each one's command. A
// script the server does not have (NOSCRIPT: its script cache was
// flushed, or it restarted) did not run; those are sent again with EVAL,
// in a second pipeline.
func runPipe(ctx context.Context, client redis.UniversalClient, calls []pipeCall) []batch.Answer[redis.Cmder] {
	cmds := make([]redis.Cmder, len(calls))
	queue := func(p redis.Pipeliner, i int, full bool) redis.Cmder {
		c := calls[i]
		switch {
		case c.script == nil:
			return p.HGetAll(ctx, c.key)
		case full:
			return c.script.Eval(ctx, p, c.keys, c.args...)
		default:
			return c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
	}
	// Each command carries its own error; Pipelined's is the first of them.
	_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range calls {
			cmds[i] = queue(p, i, false)
		}
		return nil
	})
	var again []int
	for i, c := range cmds {
		if calls[i].script != nil && isNoScript(c.Err()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range again {
				cmds[i] = queue(p, i, true)
			}
			return nil
		})
	}
	out := make([]batch.Answer[redis.Cmder], len(cmds))
	for i, c := range cmds {
		out[i] = batch.Answer[redis.Cmder]{V: c, Err: c.Err()}
	}
	return out
}

// isNoScript reports a NOSCRIPT reply: the server has not the script.
func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
