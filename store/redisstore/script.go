package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/internal/edge"
)

// The fields of a record hash, in the order of the script's replies, of the
// published messages and of the checksum.
const (
	fRev         = "rev"         // revision, decimal
	fOp          = "op"          // nonce of the CompareAndSwap call that wrote this revision, then "." and the record's Stamp in base 36 if it has one
	fHolder      = "holder"      // holder identity, "" when released
	fToken       = "token"       // fencing token, decimal
	fAcquired    = "acquired"    // AcquiredAt, RFC 3339 in UTC, "" for the zero time
	fRenewed     = "renewed"     // RenewedAt, likewise
	fDuration    = "duration"    // LeaseDuration in nanoseconds, decimal
	fTransitions = "transitions" // Transitions, decimal
	fMeta        = "meta"        // metadata, as encoded by the codec
	fSum         = "sum"         // SHA-1 (hex) of the fields above; see checksum
	numFields    = 10
	// fClaim, beside the fields above, is the revision of a record written
	// as a claim (lease.Record's Claim); absent, or another revision than
	// the record's (a write that did not know the field), means no claim.
	// It is for people, like Claim: the checksum does not cover it, and a
	// hand edit of it changes nothing but what Claim says.
	fClaim = "claim"
	// fSuccessor, beside the fields above, is the revision of a release
	// that names a successor (lease.Record's Successor), a colon and the
	// successor's identity; absent, or another revision than the
	// record's (a write that did not know the field), means none. Like
	// claim the checksum does not cover it: a hand edit of it can only
	// say who takes a released record at once, and the guard checks it.
	fSuccessor = "successor"
)

// fieldNames lists the fields in order.
var fieldNames = [numFields]string{fRev, fOp, fHolder, fToken, fAcquired, fRenewed, fDuration, fTransitions, fMeta, fSum}

// sumPrefix starts the checksummed text; it names the layout version.
const sumPrefix = "tenure/1\x00"

// casScript is the whole of CompareAndSwap, run atomically by the server.
//
//	KEYS[1]  the record hash
//	KEYS[2]  the dataset marker (with the create gate only)
//	ARGV[1]  expected revision ("0": create only if absent)
//	ARGV[2]  op nonce of this call (also the nonce of a new marker)
//	ARGV[3]  channel to publish the new record on
//	ARGV[4..10] holder, token, acquired, renewed, duration, transitions, meta
//	ARGV[11] "1": the create gate is on
//	ARGV[12] the marker nonce this process saw last ("" if none)
//	ARGV[13] how long this process has seen it, in nanoseconds, decimal
//	ARGV[14] the marker's field for the name: "born:" and the key's tag
//	ARGV[15] "1": the record is a claim (field claim); "v": a claim unless
//	         the gate vouches for the create; "": no claim
//	ARGV[16] "1": the swap is guarded (store.ReleaseGuard; absent or "" for a plain swap): it writes only
//	         over a released record with token ARGV[17], transitions
//	         ARGV[18] and duration ARGV[19] (decimal) that names the
//	         successor ARGV[20] ("" for none), and never creates one
//	ARGV[21] the successor the record names (a release handed over;
//	         absent or "" for none)
//
// Replies (nonce is the marker's, "" with the gate off):
//
//	{"ok", rev, token, nonce, v, c} written (or already written by this very
//	                               call, when go-redis retried it); v is "1"
//	                               when the gate vouches for the create, c
//	                               is "1" when the record is a claim
//	{"conflict", <10 fields>, claim, successor, nonce} the stored revision
//	                               differs (or the stored record is not the
//	                               guard's); claim and successor are the
//	                               stored fields, or ""

//	{"absent", nonce}              the record is absent and ARGV[1] ~= "0"
//	                               or the swap is guarded
//	{"corrupt", reason}            the stored record cannot be read, breaks
//	                               the bounds of store.ValidateStored, or is
//	                               at store.MaxRevision; nothing was written
//	{"exhausted", token}           the new term would need token, above
//	                               lease.MaxToken; nothing was written
//
// Decimal numbers are validated, compared and incremented as strings: Lua
// numbers are doubles and would round values above 2^53. Stored numbers
// must be canonical decimals (no sign, no leading zero) within their bounds
// before any comparison. Every new revision is max(old+1, now); a write
// that continues the stored term (store.Renews) keeps its token, and every
// other one gets max(proposed, old token+1, now) (store.NewToken, floored
// at now), where now is the server's TIME in microseconds.
//
// The create gate (docs/design.md, "A faster first leader"): the marker
// is a hash {nonce, id, age, born:<name>...}. id names the dataset: the server's run_id and
// master_replid (every restart and every promotion changes them; FLUSHALL
// deletes the marker with everything else) and, under an allkeys-*
// maxmemory-policy, the count of evicted keys. age is the longest time,
// by the clock of any process that sent it, that a process has seen this
// nonce: the marker has stood at least that long. A marker missing or
// unreadable is made anew; on a create its id is checked against the
// server's, and a marker of another id is made anew. A create is vouched
// for when the marker's age is at least the new record's LeaseDuration and
// marker has no born field for the name (set by every write: a record
// deleted by hand leaves it, so that create is not vouched for; a new
// marker has none).
var casScript = redis.NewScript(casSource)

// casSource is the text of casScript.
var casSource = `
local F = {'rev','op','holder','token','acquired','renewed','duration','transitions','meta','sum'}
local MAXTOKEN = '` + maxTokenText + `'
local MAXREV = '` + maxRevisionText + `'
local MAXDUR = '` + maxDurationText + `'
local MAXHOLDER = ` + maxHolderText + `

local function canon(s)
  return s == '0' or string.match(s, '^[1-9]%d*$') ~= nil
end

-- gt compares canonical decimals.
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

local function inc(s)
  local i = #s
  while i > 0 and string.byte(s, i) == 57 do i = i - 1 end
  if i == 0 then return '1' .. string.rep('0', #s) end
  return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) .. string.rep('0', #s - i)
end

-- goodholder applies store.ValidateName's rules to a holder: at most
-- MAXHOLDER bytes of valid UTF-8 without control characters (C0, DEL, C1).
local function goodholder(s)
  if #s > MAXHOLDER then return false end
  local i, n = 1, #s
  while i <= n do
    local c = string.byte(s, i)
    if c < 128 then
      if c < 32 or c == 127 then return false end
      i = i + 1
    else
      local need, lo, hi
      if c == 194 then need, lo, hi = 1, 160, 191
      elseif c >= 195 and c <= 223 then need, lo, hi = 1, 128, 191
      elseif c == 224 then need, lo, hi = 2, 160, 191
      elseif c == 237 then need, lo, hi = 2, 128, 159
      elseif c >= 225 and c <= 239 then need, lo, hi = 2, 128, 191
      elseif c == 240 then need, lo, hi = 3, 144, 191
      elseif c == 244 then need, lo, hi = 3, 128, 143
      elseif c >= 241 and c <= 243 then need, lo, hi = 3, 128, 191
      else return false end
      if i + need > n then return false end
      local b = string.byte(s, i + 1)
      if b < lo or b > hi then return false end
      for j = i + 2, i + need do
        b = string.byte(s, j)
        if b < 128 or b > 191 then return false end
      end
      i = i + need + 1
    end
  end
  return true
end

local function checksum(v)
  return redis.sha1hex('tenure/1\0' .. table.concat(v, '\0', 1, 9))
end

local function show(s)
  if #s > 40 then return string.format('%q', string.sub(s, 1, 40)) .. '...' end
  return string.format('%q', s)
end

-- invalid returns why the stored fields v are out of bounds, or nil.
local function invalid(v)
  if not canon(v[1]) or v[1] == '0' or gt(v[1], MAXREV) then
    return 'field rev = ' .. show(v[1]) .. ' is not a revision in [1, ' .. MAXREV .. ']'
  end
  if not canon(v[4]) or gt(v[4], MAXTOKEN) then
    return 'field token = ' .. show(v[4]) .. ' is not a token in [0, ' .. MAXTOKEN .. ']'
  end
  if not canon(v[8]) or gt(v[8], MAXTOKEN) then
    return 'field transitions = ' .. show(v[8]) .. ' is not a count in [0, ' .. MAXTOKEN .. ']'
  end
  if not canon(v[7]) or gt(v[7], MAXDUR) then
    return 'field duration = ' .. show(v[7]) .. ' is not a duration in [0, ' .. MAXDUR .. '] nanoseconds'
  end
  if v[3] ~= '' and v[7] == '0' then
    return 'field duration is 0 while the record has a holder'
  end
  if not goodholder(v[3]) then
    return 'field holder = ' .. show(v[3]) .. ' is not a valid holder'
  end
  return nil
end

local gate = ARGV[11] == '1'
local mnonce, mid, mage = '', nil, '0'

-- MOVES are the commands that bring data into a key or a database from
-- elsewhere (another key, another database, a DUMP, a file): they keep
-- run_id and master_replid, so the identity counts their calls.
local MOVES = {'swapdb', 'copy', 'move', 'rename', 'renamenx', 'restore', 'restore%-asking', 'debug'}

-- ident names the dataset as the server sees it now: run_id,
-- master_replid, evicted_keys and the calls of every command in MOVES
-- (INFO commandstats counts calls from scripts and transactions too).
-- sure is false when the server cannot vouch for those counts: before
-- Redis 7.0 (no count of CONFIG RESETSTAT apart from CONFIG's others), or
-- once CONFIG RESETSTAT has set them back to zero.
local function ident()
  local function field(section, name, pat)
    return string.match(redis.call('INFO', section), name .. ':(' .. pat .. ')') or '?'
  end
  local id = field('server', 'run_id', '%w+') .. '/' .. field('replication', 'master_replid', '%w+') ..
    '/' .. field('stats', 'evicted_keys', '%d+')
  local major = tonumber(string.match(field('server', 'redis_version', '[%d%.]+'), '^(%d+)')) or 0
  local stats = '\n' .. redis.call('INFO', 'commandstats')
  local sure = major >= 7 and string.find(stats, '\ncmdstat_config|resetstat:', 1, true) == nil
  for _, c in ipairs(MOVES) do
    id = id .. '/' .. (string.match(stats, '\ncmdstat_' .. c .. ':calls=(%d+)') or '0')
  end
  return id, sure
end

-- newmarker makes the marker anew for dataset id. Its nonce is made of
-- the server's run_id and TIME and of a count the marker keeps (gen), never
-- of the call's arguments: a call resent by the client library makes a
-- marker of a nonce of its own.
local function newmarker(id)
  local gen = '0'
  if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
    local g = redis.call('HGET', KEYS[2], 'gen')
    if g and canon(g) and not gt(g, MAXREV) then gen = g end
  end
  gen = inc(gen)
  local t = redis.call('TIME')
  local run = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') or '?'
  local nonce = redis.sha1hex(run .. ':' .. t[1] .. '.' .. t[2] .. ':' .. gen)
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], 'nonce', nonce, 'id', id, 'age', '0', 'gen', gen)
  mnonce, mid, mage = nonce, id, '0'
end

if gate then
  local good = false
  if redis.call('TYPE', KEYS[2])['ok'] == 'hash' then
    local m = redis.call('HMGET', KEYS[2], 'nonce', 'id', 'age')
    if m[1] and m[2] and m[3] and m[1] ~= '' and canon(m[3]) and not gt(m[3], MAXDUR) then
      mnonce, mid, mage = m[1], m[2], m[3]
      good = true
    end
  end
  if not good then newmarker((ident())) end
  local age = ARGV[13]
  -- Raise the stored age only by a second, or a sixteenth of it, at least:
  -- renewals attest on every swap, and a write of the marker on each would
  -- double the writes. A lower stored age only vouches later.
  if ARGV[12] == mnonce and canon(age) and not gt(age, MAXDUR) and gt(age, mage) and
      tonumber(age) - tonumber(mage) >= math.max(1e9, tonumber(mage) / 16) then
    mage = age
    redis.call('HSET', KEYS[2], 'age', mage)
  end
end

local key = KEYS[1]
local kind = redis.call('TYPE', key)['ok']
local cur = nil
if kind ~= 'none' then
  if kind ~= 'hash' then
    return {'corrupt', 'the key holds a ' .. kind .. ', not a hash'}
  end
  cur = redis.call('HMGET', key, unpack(F))
  for i = 1, #F do
    if not cur[i] then return {'corrupt', 'field ' .. F[i] .. ' is missing'} end
  end
  if checksum(cur) ~= cur[10] then
    return {'corrupt', 'checksum mismatch: the hash was changed by something other than tenure'}
  end
  local why = invalid(cur)
  if why then return {'corrupt', why} end
  local cclaim = redis.call('HGET', key, 'claim') or ''
  local csucc = redis.call('HGET', key, 'successor') or ''
  local named = ''
  if string.sub(csucc, 1, #cur[1] + 1) == cur[1] .. ':' then named = string.sub(csucc, #cur[1] + 2) end
  if cur[2] == ARGV[2] then
    local c = '0'
    if cclaim == cur[1] then c = '1' end
    return {'ok', cur[1], cur[4], mnonce, '0', c}
  end
  if cur[1] ~= ARGV[1] or ARGV[16] == '1' and (cur[3] ~= '' or cur[4] ~= ARGV[17] or cur[8] ~= ARGV[18] or cur[7] ~= ARGV[19] or named ~= ARGV[20]) then
    table.insert(cur, 1, 'conflict')
    table.insert(cur, cclaim)
    table.insert(cur, csucc)
    table.insert(cur, mnonce)
    return cur
  end
elseif ARGV[1] ~= '0' or ARGV[16] == '1' then
  return {'absent', mnonce}
end

local vouched = '0'
if gate then
  if cur == nil then
    local id, sure = ident()
    if id ~= mid then newmarker(id) end
    if sure and redis.call('HEXISTS', KEYS[2], ARGV[14]) == 0 and not gt(ARGV[8], mage) then vouched = '1' end
  end
end

local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
local rev = inc(cur and cur[1] or '0')
if gt(now, rev) then rev = now end
if gt(rev, MAXREV) then
  return {'corrupt', 'revision ' .. cur[1] .. ' is the largest a revision may be: no later one exists'}
end
local token = ARGV[5]
if cur == nil or cur[4] ~= token or (ARGV[4] ~= '' and ARGV[4] ~= cur[3]) then
  if cur and not gt(token, cur[4]) then token = inc(cur[4]) end
  if gt(now, token) then token = now end
  if gt(token, MAXTOKEN) then return {'exhausted', token} end
end

local v = {rev, ARGV[2], ARGV[4], token, ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]}
v[10] = checksum(v)
local args = {}
local msg = {}
for i = 1, #F do
  args[2 * i - 1] = F[i]
  args[2 * i] = v[i]
  msg[i] = #v[i] .. ':' .. v[i]
end
local claim = '0'
if ARGV[15] == '1' or ARGV[15] == 'v' and vouched ~= '1' then
  claim = '1'
  table.insert(args, 'claim')
  table.insert(args, rev)
  table.insert(msg, #rev .. ':' .. rev)
elseif cur then
  redis.call('HDEL', key, 'claim')
end
local succ = ARGV[21] or ''
if succ ~= '' then
  if claim ~= '1' then table.insert(msg, '0:') end
  table.insert(args, 'successor')
  table.insert(args, rev .. ':' .. succ)
  table.insert(msg, #rev + 1 + #succ .. ':' .. rev .. ':' .. succ)
elseif cur then
  redis.call('HDEL', key, 'successor')
end
redis.call('HSET', key, unpack(args))
if gate then
  redis.call('HSETNX', KEYS[2], ARGV[14], '1')
end
redis.call('PUBLISH', ARGV[3], table.concat(msg))
return {'ok', rev, token, mnonce, vouched, claim}
`

// The bounds the script applies, as decimal text.
var (
	maxTokenText    = strconv.FormatUint(lease.MaxToken, 10)
	maxRevisionText = strconv.FormatUint(uint64(store.MaxRevision), 10)
	maxDurationText = strconv.FormatInt(int64(lease.MaxDuration), 10)
	maxHolderText   = strconv.Itoa(store.MaxHolderBytes)
)

// raw is a record as stored: the fields of the hash, in fieldNames order,
// then the claim field and the successor field ("" when absent).
type raw [numFields + 2]string

// sum writes into out the hex digits of the SHA-1 that the script stores in
// the sum field: it covers every other field, so that a hash edited by hand
// (or by anything other than the script) is recognised as corrupt instead of
// being trusted or overwritten. It guards against accidents, not against an
// attacker who can write to Redis. It allocates no hash (every watch message
// is checked: this is on the hot path of a Hub).
func (r *raw) sum(out *[2 * sha1.Size]byte) {
	n := len(sumPrefix)
	for i := range numFields - 1 {
		n += len(r[i]) + 1
	}
	var stack [512]byte
	b := stack[:0]
	if n > len(stack) {
		b = make([]byte, 0, n)
	}
	b = append(b, sumPrefix...)
	for i := range numFields - 1 {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, r[i]...)
	}
	d := sha1.Sum(b)
	hex.Encode(out[:], d[:])
}

// rawFromMap builds a raw record from HGETALL's reply.
func rawFromMap(m map[string]string) (raw, error) {
	var r raw
	for i, f := range fieldNames {
		v, ok := m[f]
		if !ok {
			return r, fmt.Errorf("field %s is missing", f)
		}
		r[i] = v
	}
	r[numFields] = m[fClaim]
	r[numFields+1] = m[fSuccessor]
	return r, nil
}

// rawFromReply builds a raw record from the fields of a script reply, the
// claim and successor fields last.
func rawFromReply(vals []any) (raw, error) {
	var r raw
	if len(vals) != len(r) {
		return r, fmt.Errorf("the script replied with %d fields, want %d", len(vals), len(r))
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			f := fClaim
			switch {
			case i < numFields:
				f = fieldNames[i]
			case i > numFields:
				f = fSuccessor
			}
			return r, fmt.Errorf("field %s: the script replied with a %T", f, v)
		}
		r[i] = s
	}
	return r, nil
}

// errBadMessage: a published message is not a record. It only makes the
// watcher read the record instead.
var errBadMessage = errors.New("malformed message")

// rawFromMessage parses a published message: every field as its length in
// decimal, a colon, and its bytes; then the claim field, only in the
// message of a claim or a release naming a successor (empty there), and
// the successor field, only in the latter.
func rawFromMessage(msg string) (raw, error) {
	var r raw
	for i := range numFields + 2 {
		if i >= numFields && msg == "" {
			break
		}
		var ok bool
		if r[i], msg, ok = lengthPrefixed(msg); !ok {
			return r, errBadMessage
		}
	}
	if msg != "" {
		return r, errBadMessage
	}
	return r, nil
}

// lengthPrefixed splits off the field that starts msg: its length in
// decimal, a colon, and its bytes. It reports false when msg does not
// start with one.
func lengthPrefixed(msg string) (field, rest string, ok bool) {
	colon := strings.IndexByte(msg, ':')
	if colon < 1 || colon > 10 {
		return "", msg, false
	}
	n, err := strconv.Atoi(msg[:colon])
	if err != nil || n < 0 || n > len(msg)-colon-1 {
		return "", msg, false
	}
	return msg[colon+1 : colon+1+n], msg[colon+1+n:], true
}

// parsed is a raw record checked and converted, metadata still encoded.
type parsed struct {
	rev         uint64
	holder      string
	token       uint64
	acquired    time.Time
	renewed     time.Time
	duration    time.Duration
	transitions uint64
	meta        string
	claim       bool
	successor   string
	stamp       uint64 // lease.Record's Stamp, kept in field op (see stampOf)
}

// parse checks the checksum and every field of r. Its errors say what is
// wrong, and are wrapped in ErrCorruptRecord by the caller.
func (r *raw) parse() (parsed, error) {
	var p parsed
	var sum [2 * sha1.Size]byte
	if r.sum(&sum); string(sum[:]) != r[9] {
		return p, errors.New("checksum mismatch: the hash was changed by something other than tenure")
	}
	var (
		ok  bool
		err error
	)
	if p.rev, ok = decimal(r[0]); !ok || p.rev == 0 || p.rev > uint64(store.MaxRevision) {
		return p, fmt.Errorf("field %s = %.40q is not a revision in [1, %d]", fRev, r[0], store.MaxRevision)
	}
	p.holder = r[2]
	if p.token, ok = decimal(r[3]); !ok {
		return p, fmt.Errorf("field %s = %.40q is not a token", fToken, r[3])
	}
	if p.acquired, err = edge.ParseTime(r[4]); err != nil {
		return p, fmt.Errorf("field %s: %w", fAcquired, err)
	}
	if p.renewed, err = edge.ParseTime(r[5]); err != nil {
		return p, fmt.Errorf("field %s: %w", fRenewed, err)
	}
	d, ok := decimal(r[6])
	if !ok || d > math.MaxInt64 {
		return p, fmt.Errorf("field %s = %.40q is not a duration in nanoseconds", fDuration, r[6])
	}
	p.duration = time.Duration(d)
	if p.transitions, ok = decimal(r[7]); !ok {
		return p, fmt.Errorf("field %s = %.40q is not a count", fTransitions, r[7])
	}
	p.meta = r[8]
	p.claim = r[numFields] == r[0]
	if rest, ok := strings.CutPrefix(r[numFields+1], r[0]); ok && strings.HasPrefix(rest, ":") {
		p.successor = rest[1:]
	}
	p.stamp = stampOf(r[1])
	return p, nil
}

// stampOf returns the Stamp kept in the op nonce op: the base-36 number
// after its last dot, 0 if there is none (a record written without a
// Stamp, or by hand). The checksum covers it, like every field of op.
func stampOf(op string) uint64 {
	i := strings.LastIndexByte(op, '.')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseUint(op[i+1:], 36, 64)
	if err != nil {
		return 0
	}
	return n
}

// decimal parses s as the script writes numbers: a canonical decimal (no
// sign, no leading zero) that fits a uint64.
// ParseUint in base 10 takes digits alone (no sign, no underscore), so
// only a leading zero is left to refuse; nothing is allocated for a good
// one, and a watch parses four in every message.
func decimal(s string) (uint64, bool) {
	if len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
