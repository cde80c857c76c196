package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/store"
)

var _ store.Batcher[struct{}] = (*Store[struct{}])(nil)

// maxScriptSwaps is the most swaps one call of the batch script carries:
// the server runs nothing else while a script runs, and a swap costs it
// about 20 µs.
const maxScriptSwaps = 64

// batchScript runs the compare-and-swap script for each swap of a batch,
// in one call: casScript's body made a function of its keys and
// arguments, called once per swap within a pcall, so that an error of one
// swap (a command refused) is its own reply and the others run.
//
//	KEYS     the record hash of each swap, then the dataset marker (with
//	         the create gate only)
//	ARGV[1]  "1": the create gate is on
//	ARGV[2..] for each swap, the count of its arguments, then its
//	         arguments, as casScript takes them
//
// It replies with one reply per swap, in order, each casScript's reply, or
// {"error", message} for a swap whose commands failed.
var batchScript = redis.NewScript(batchSource(casSource))

// batchSource makes the batch script of the text of casScript: the part
// from its first use of its keys or arguments on becomes a function of
// them.
func batchSource(cas string) string {
	const body = "\nlocal gate = ARGV[11] == '1'\n"
	i := strings.Index(cas, body)
	if i < 0 {
		panic("redisstore: the compare-and-swap script has no line " + strconv.Quote(body))
	}
	return cas[:i] + `
local function one(KEYS, ARGV)
` + cas[i:] + `
end

local gated = ARGV[1] == '1'
local n = #KEYS
if gated then n = n - 1 end
local out = {}
local at = 2
for i = 1, n do
  local keys = {KEYS[i]}
  if gated then keys[2] = KEYS[#KEYS] end
  local count = tonumber(ARGV[at])
  local args = {}
  for j = 1, count do args[j] = ARGV[at + j] end
  at = at + count + 1
  local ok, r = pcall(one, keys, args)
  if ok then
    out[i] = r
  else
    if type(r) == 'table' and r.err then r = r.err end
    out[i] = {'error', tostring(r)}
  end
end
return out
`
}

// BatchesSwaps reports whether CompareAndSwapBatch sends a batch in one
// script call: on one server (a *redis.Client, a failover client
// included), where every key is on the server the script runs on. On a
// Redis Cluster every name is a hash slot of its own (see Key), and a
// script may only touch the keys of one slot, so it reports false there
// (and for a Ring) and a Group's renewals go out one swap each, in the
// Store's pipelines. It is part of [store.Batcher].
func (s *Store[M]) BatchesSwaps() bool {
	if s == nil {
		return false
	}
	_, one := s.client.(*redis.Client)
	return one
}

// CompareAndSwapBatch runs each swap as CompareAndSwap does and returns
// their results in order, sending up to 64 swaps in one call of a script
// that runs the compare-and-swap script once per swap: each swap is
// atomic (no command runs between its compare and its write) and
// independent of the others, and reports what CompareAndSwap would. A
// name or record that CompareAndSwap would refuse before sending is
// refused alone and not sent; a failed call (the network, ctx) fails
// each swap it carried, whose outcome is then unknown. It implements
// [store.Batcher]; on a client where BatchesSwaps is false, it swaps one
// name at a time.
func (s *Store[M]) CompareAndSwapBatch(ctx context.Context, swaps []store.Swap[M]) []store.SwapResult[M] {
	if !s.BatchesSwaps() {
		return store.SwapEach(ctx, swaps, s.CompareAndSwap)
	}
	out := make([]store.SwapResult[M], len(swaps))
	for start := 0; start < len(swaps); start += maxScriptSwaps {
		end := min(start+maxScriptSwaps, len(swaps))
		s.swapBatch(ctx, swaps[start:end], out[start:end])
	}
	return out
}

// batched is one swap of a batch call: its index in the batch and the
// metadata it stores.
type batched[M any] struct {
	i int
	m M
}

// swapBatch runs swaps in one script call and fills out with their results.
func (s *Store[M]) swapBatch(ctx context.Context, swaps []store.Swap[M], out []store.SwapResult[M]) {
	const op = "CompareAndSwap"
	var keys []string
	args := []any{""}
	var sent []batched[M]
	var marker string
	for i, sw := range swaps {
		if err := s.check(ctx, op, sw.Name); err != nil {
			out[i].Err = err
			continue
		}
		k, a, m, err := s.swapArgs(op, sw.Name, sw.Expected, nil, sw.Next, false)
		if err != nil {
			out[i].Err = err
			continue
		}
		keys = append(keys, k[0])
		if len(k) > 1 {
			marker = k[1]
		}
		args = append(args, strconv.Itoa(len(a)))
		args = append(args, a...)
		sent = append(sent, batched[M]{i: i, m: m})
	}
	if len(sent) == 0 {
		return
	}
	if marker != "" {
		keys = append(keys, marker)
		args[0] = "1"
	}
	replies, err := s.runBatch(ctx, keys, args, len(sent))
	for j, b := range sent {
		sw := swaps[b.i]
		if err != nil {
			out[b.i].Err = fail(op, sw.Name, err)
			continue
		}
		reply, ok := replies[j].([]any)
		if !ok {
			out[b.i].Err = fail(op, sw.Name, fmt.Errorf("a reply of type %T to the script", replies[j]))
			continue
		}
		if len(reply) == 2 && reply[0] == "error" {
			out[b.i].Err = fail(op, sw.Name, fmt.Errorf("the script failed: %v", reply[1]))
			continue
		}
		out[b.i].Record, out[b.i].Revision, out[b.i].Err = s.swapped(op, sw.Name, sw.Expected, sw.Next, b.m, reply, nil)
	}
}

// runBatch sends one call of the batch script, through the Store's
// pipelines, and returns its n replies.
func (s *Store[M]) runBatch(ctx context.Context, keys []string, args []any, n int) ([]any, error) {
	cmd, err := s.pipe.Do(ctx, pipeCall{script: batchScript, keys: keys, args: args})
	if err != nil {
		return nil, err
	}
	c, ok := cmd.(*redis.Cmd)
	if !ok {
		return nil, fmt.Errorf("a reply of type %T to the script", cmd)
	}
	replies, err := c.Slice()
	if err != nil {
		return nil, err
	}
	if len(replies) != n {
		return nil, fmt.Errorf("the script replied for %d swaps, want %d", len(replies), n)
	}
	return replies, nil
}
