package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fields of a record hash, in the order of the script's replies, of the
// published messages and of the checksum.
const (
	fRev         = "rev"         // revision, decimal
	fOp          = "op"          // nonce of the CompareAndSwap call that wrote this revision
	fHolder      = "holder"      // holder identity, "" when released
	fToken       = "token"       // fencing token, decimal
	fAcquired    = "acquired"    // AcquiredAt, RFC 3339 in UTC, "" for the zero time
	fRenewed     = "renewed"     // RenewedAt, likewise
	fDuration    = "duration"    // LeaseDuration in nanoseconds, decimal
	fTransitions = "transitions" // Transitions, decimal
	fMeta        = "meta"        // metadata, as encoded by the codec
	fSum         = "sum"         // SHA-1 (hex) of the fields above; see checksum
	numFields    = 10
)

// fieldNames lists the fields in order.
var fieldNames = [numFields]string{fRev, fOp, fHolder, fToken, fAcquired, fRenewed, fDuration, fTransitions, fMeta, fSum}

// sumPrefix starts the checksummed text; it names the layout version.
const sumPrefix = "tenure/1\x00"

// casScript is the whole of CompareAndSwap, run atomically by the server.
//
//	KEYS[1]  the record hash
//	ARGV[1]  expected revision ("0": create only if absent)
//	ARGV[2]  op nonce of this call
//	ARGV[3]  channel to publish the new record on
//	ARGV[4..10] holder, token, acquired, renewed, duration, transitions, meta
//
// Replies:
//
//	{"ok", rev, token}             written (or already written by this very
//	                               call, when go-redis retried it)
//	{"conflict", <10 fields>}      the stored revision differs
//	{"absent"}                     the record is absent and ARGV[1] ~= "0"
//	{"corrupt", reason}            the stored record cannot be read; nothing
//	                               was written
//
// Decimal numbers are handled as strings: Lua numbers are doubles and
// would round tokens above 2^53. Every new revision is max(old+1, now) and
// every new token (a created record, or a token other than the stored one)
// is max(proposed, now), where now is the server's TIME in microseconds.
var casScript = redis.NewScript(`
local F = {'rev','op','holder','token','acquired','renewed','duration','transitions','meta','sum'}

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

local function checksum(v)
  return redis.sha1hex('tenure/1\0' .. table.concat(v, '\0', 1, 9))
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
  if not string.match(cur[1], '^[1-9]%d*$') or #cur[1] > 20 then
    return {'corrupt', 'field rev is not a revision'}
  end
  if not string.match(cur[4], '^%d+$') or #cur[4] > 20 then
    return {'corrupt', 'field token is not a token'}
  end
  if cur[2] == ARGV[2] then
    return {'ok', cur[1], cur[4]}
  end
  if cur[1] ~= ARGV[1] then
    table.insert(cur, 1, 'conflict')
    return cur
  end
elseif ARGV[1] ~= '0' then
  return {'absent'}
end

local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
local rev = inc(cur and cur[1] or '0')
if gt(now, rev) then rev = now end
local token = ARGV[5]
if (cur == nil or cur[4] ~= token) and gt(now, token) then token = now end

local v = {rev, ARGV[2], ARGV[4], token, ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]}
v[10] = checksum(v)
local args = {}
local msg = {}
for i = 1, #F do
  args[2 * i - 1] = F[i]
  args[2 * i] = v[i]
  msg[i] = #v[i] .. ':' .. v[i]
end
redis.call('HSET', key, unpack(args))
redis.call('PUBLISH', ARGV[3], table.concat(msg))
return {'ok', rev, token}
`)

// raw is a record as stored: the fields of the hash, in fieldNames order.
type raw [numFields]string

// checksum is the SHA-1 that the script stores in the sum field: it covers
// every other field, so that a hash edited by hand (or by anything other
// than the script) is recognised as corrupt instead of being trusted or
// overwritten. It guards against accidents, not against an attacker who can
// write to Redis.
func (r *raw) checksum() string {
	h := sha1.New()
	h.Write([]byte(sumPrefix))
	for i := range numFields - 1 {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(r[i]))
	}
	return hex.EncodeToString(h.Sum(nil))
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
	return r, nil
}

// rawFromReply builds a raw record from the fields of a script reply.
func rawFromReply(vals []any) (raw, error) {
	var r raw
	if len(vals) != numFields {
		return r, fmt.Errorf("the script replied with %d fields, want %d", len(vals), numFields)
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			return r, fmt.Errorf("field %s: the script replied with a %T", fieldNames[i], v)
		}
		r[i] = s
	}
	return r, nil
}

// errBadMessage: a published message is not a record. It only makes the
// watcher read the record instead.
var errBadMessage = errors.New("malformed message")

// rawFromMessage parses a published message: every field as its length in
// decimal, a colon, and its bytes.
func rawFromMessage(msg string) (raw, error) {
	var r raw
	for i := range numFields {
		colon := strings.IndexByte(msg, ':')
		if colon < 1 || colon > 10 {
			return r, errBadMessage
		}
		n, err := strconv.Atoi(msg[:colon])
		if err != nil || n < 0 || n > len(msg)-colon-1 {
			return r, errBadMessage
		}
		r[i] = msg[colon+1 : colon+1+n]
		msg = msg[colon+1+n:]
	}
	if msg != "" {
		return r, errBadMessage
	}
	return r, nil
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
}

// parse checks the checksum and every field of r. Its errors say what is
// wrong, and are wrapped in ErrCorruptRecord by the caller.
func (r *raw) parse() (parsed, error) {
	var p parsed
	if r.checksum() != r[9] {
		return p, errors.New("checksum mismatch: the hash was changed by something other than tenure")
	}
	var err error
	if p.rev, err = strconv.ParseUint(r[0], 10, 64); err != nil || p.rev == 0 {
		return p, fmt.Errorf("field %s = %q is not a revision", fRev, r[0])
	}
	p.holder = r[2]
	if p.token, err = strconv.ParseUint(r[3], 10, 64); err != nil {
		return p, fmt.Errorf("field %s = %q is not a token", fToken, r[3])
	}
	if p.acquired, err = parseTime(r[4]); err != nil {
		return p, fmt.Errorf("field %s: %w", fAcquired, err)
	}
	if p.renewed, err = parseTime(r[5]); err != nil {
		return p, fmt.Errorf("field %s: %w", fRenewed, err)
	}
	d, err := strconv.ParseInt(r[6], 10, 64)
	if err != nil || d < 0 {
		return p, fmt.Errorf("field %s = %q is not a duration in nanoseconds", fDuration, r[6])
	}
	p.duration = time.Duration(d)
	if p.transitions, err = strconv.ParseUint(r[7], 10, 64); err != nil {
		return p, fmt.Errorf("field %s = %q is not a count", fTransitions, r[7])
	}
	p.meta = r[8]
	return p, nil
}

// formatTime renders t for the hash: RFC 3339 in UTC with nanoseconds, ""
// for the zero time. Times outside years 0-9999 have no RFC 3339 form and
// are refused.
func formatTime(t time.Time) (string, error) {
	if t.IsZero() {
		return "", nil
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return "", fmt.Errorf("time %v is outside years 0-9999", t)
	}
	return t.UTC().Format(time.RFC3339Nano), nil
}

// parseTime reverses formatTime.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	return t.UTC(), nil
}
