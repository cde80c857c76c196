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
//	ARGV[2]  the batch channel of the Store's prefix (see batchChannel)
//	ARGV[3..] for each swap, the count of its arguments, then its
//	         arguments, as casScript takes them
//
// It replies with one reply per swap, in order, each casScript's reply, or
// {"error", message} for a swap whose commands failed.
//
// The records it writes are published together, as one message on the
// batch channel (see batchMessage), which every Hub watching a name of the
// prefix subscribes. A record is also published alone on its name's
// channel, as casScript does, when that channel has a subscriber that
// does not hear the batch channel: one that subscribed the name's channel
// without its hears-batches channel (see hearsBatches), as a Hub of a
// version without batch messages does.
var batchScript = redis.NewScript(batchSource(casSource))

// The batch channel and its messages.
const (
	// batchChannelSuffix follows the prefix in the batch channel's name.
	batchChannelSuffix = "tenure:changes"
	// hearsBatchesSuffix follows a name's channel in the name of the
	// channel that a Hub subscribes with it, to say that it hears the
	// batch channel too; nothing is published on it.
	hearsBatchesSuffix = ":batched"
	// batchHeader starts a batch message; it names the layout version.
	batchHeader = "tenure-batch/1\x00"
	// publishLine is casScript's publication of the record it wrote.
	publishLine = "redis.call('PUBLISH', ARGV[3], table.concat(msg))"
)

// batchSource makes the batch script of the text of casScript: the part
// from its first use of its keys or arguments on becomes a function of
// them.
func batchSource(cas string) string {
	const body = "\nlocal gate = ARGV[11] == '1'\n"
	i := strings.Index(cas, body)
	if i < 0 {
		panic("redisstore: the compare-and-swap script has no line " + strconv.Quote(body))
	}
	j := strings.Index(cas, publishLine)
	if j < i {
		panic("redisstore: the compare-and-swap script has no line " + strconv.Quote(publishLine) + " after its body")
	}
	return cas[:i] + `
local heard = {}
local function publish(ch, m)
  heard[#heard + 1] = #ch .. ':' .. ch .. #m .. ':' .. m
  local n = redis.call('PUBSUB', 'NUMSUB', ch, ch .. '` + hearsBatchesSuffix + `')
  if n[2] > n[4] then redis.call('PUBLISH', ch, m) end
end

local function one(KEYS, ARGV)
` + cas[i:j] + "publish(ARGV[3], table.concat(msg))" + cas[j+len(publishLine):] + `
end

local gated = ARGV[1] == '1'
local n = #KEYS
if gated then n = n - 1 end
local out = {}
local at = 3
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
if #heard > 0 then
  redis.call('PUBLISH', ARGV[2], '` + batchHeader + `' .. table.concat(heard))
end
return out
`
}

// batchChannel is the channel of the batch messages of the Store's
// prefix.
func (s *Store[M]) batchChannel() string { return s.cfg.prefix + batchChannelSuffix }

// batchOf returns the batch channel of the prefix of a name's channel (see
// Channel): escaped, a name has no '{', so the last "tenure:{" starts its
// key's own part.
func batchOf(channel string) string {
	i := strings.LastIndex(channel, "tenure:{")
	if i < 0 {
		return ""
	}
	return channel[:i] + batchChannelSuffix
}

// inBatch reports whether batch is the batch channel of the name's channel
// ch (batchOf(ch) == batch, without making a string).
func inBatch(ch, batch string) bool {
	prefix, ok := strings.CutSuffix(batch, batchChannelSuffix)
	return ok && strings.LastIndex(ch, "tenure:{") == len(prefix) && strings.HasPrefix(ch, prefix)
}

// batchEntries parses a batch message: batchHeader, then for each record
// published its name's channel and the message that casScript would
// publish on it, each as its length in decimal, a colon and its bytes. It
// calls fn with each entry, in order, and reports whether the whole
// message was well formed; it stops at the first entry that is not.
func batchEntries(payload string, fn func(channel, msg string)) bool {
	rest, ok := strings.CutPrefix(payload, batchHeader)
	if !ok {
		return false
	}
	for rest != "" {
		var ch, m string
		if ch, rest, ok = lengthPrefixed(rest); !ok {
			return false
		}
		if m, rest, ok = lengthPrefixed(rest); !ok {
			return false
		}
		fn(ch, m)
	}
	return true
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
	keys := make([]string, 0, len(swaps)+1)
	// Room for every swap's count and arguments (a renewal's 15) at once.
	args := make([]any, 0, 2+16*len(swaps))
	args = append(args, "", s.batchChannel())
	sent := make([]batched[M], 0, len(swaps))
	var marker string
	for i, sw := range swaps {
		if err := s.check(ctx, op, sw.Name); err != nil {
			out[i].Err = err
			continue
		}
		at := len(args)
		k, a, m, err := s.appendSwapArgs(append(args, nil), op, sw.Name, sw.Expected, nil, sw.Next, false)
		if err != nil {
			out[i].Err = err
			continue
		}
		args = a
		args[at] = strconv.Itoa(len(args) - at - 1)
		keys = append(keys, k[0])
		if len(k) > 1 {
			marker = k[1]
		}
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
