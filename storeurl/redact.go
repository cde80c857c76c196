package storeurl

import (
	"cmp"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// hidden replaces a credential in messages.
const hidden = "xxxxx"

// secretKeys are the query parameters and keyword/value keys that carry
// credentials (libpq and pgx accept them), lower-cased.
var secretKeys = []string{"password", "sslpassword"}

func isSecretKey(k string) bool {
	return slices.Contains(secretKeys, strings.ToLower(strings.TrimSpace(k)))
}

// display returns raw as it may be shown in a message, quoted: every part
// that may be a credential is replaced by xxxxx, whether raw is a URL that
// parses, one that does not, a keyword/value string or anything else. It
// works on the text alone, never on what a parser made of it, so that a
// password with a '/', '?', '#' or '@' in it cannot end up in a host or a
// path.
func display(raw string) string {
	if looksKeywordValue(raw) {
		pairs, ok := keywordValues(raw)
		if !ok {
			return "(a keyword/value string that cannot be parsed)"
		}
		var b strings.Builder
		for i, p := range pairs {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.key)
			b.WriteByte('=')
			if isSecretKey(p.key) {
				b.WriteString(hidden)
			} else {
				b.WriteString(p.raw)
			}
		}
		return strconv.Quote(b.String())
	}
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		scheme, rest = "", raw
	}
	var b strings.Builder
	if hasScheme {
		b.WriteString(scheme + "://")
	}
	// The userinfo ends at the last '@': a password may hold '@', '/', '?'
	// or '#', and hiding too much is the safe mistake.
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		b.WriteString(userDisplay(rest[:at]))
		rest = rest[at+1:]
	}
	rest, _, hasFragment := strings.Cut(rest, "#")
	hostPath, query, hasQuery := strings.Cut(rest, "?")
	b.WriteString(hostPath)
	if hasQuery {
		b.WriteByte('?')
		for i, part := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			k, _, hasValue := strings.Cut(part, "=")
			if hasValue && isSecretKey(unescapeQuery(k)) {
				part = k + "=" + hidden
			}
			b.WriteString(part)
		}
	}
	if hasFragment {
		b.WriteString("#…")
	}
	return strconv.Quote(b.String())
}

// userDisplay shows a URL's userinfo: the user name when it is clearly one,
// the password never.
func userDisplay(userinfo string) string {
	user, _, hasPassword := strings.Cut(userinfo, ":")
	if strings.ContainsAny(user, "/?#") {
		return hidden + "@"
	}
	if !hasPassword {
		return user + "@"
	}
	return user + ":" + hidden + "@"
}

// secrets returns every text in raw that may be a credential, in the forms
// a library may quote it in (as written, decoded, re-encoded), longest
// first: the password of a URL's userinfo, the values of secret query
// parameters, and the values of secret keys of a keyword/value string.
func secrets(raw string) []string {
	seen := map[string]bool{}
	add := func(s string) {
		forms := []string{s}
		if u, err := url.PathUnescape(s); err == nil {
			forms = append(forms, u)
		}
		if u, err := url.QueryUnescape(s); err == nil {
			forms = append(forms, u)
		}
		for _, f := range forms {
			if f != "" {
				seen[f] = true
			}
		}
	}
	addDecoded := func(s string) {
		add(s)
		add(url.PathEscape(s))
		add(url.QueryEscape(s))
		add(strings.TrimPrefix(url.UserPassword("u", s).String(), "u:"))
	}
	if looksKeywordValue(raw) {
		pairs, _ := keywordValues(raw)
		for _, p := range pairs {
			if isSecretKey(p.key) {
				add(p.raw)
				addDecoded(p.value)
			}
		}
		// An unterminated quote: whatever follows a secret key.
		for _, k := range secretKeys {
			if i := strings.Index(strings.ToLower(raw), k); i >= 0 {
				if _, v, ok := strings.Cut(raw[i:], "="); ok {
					v = strings.TrimSpace(v)
					add(v)
					add(strings.TrimPrefix(v, "'"))
				}
			}
		}
	}
	_, rest, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		rest = raw
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			add(pw)
		} else if strings.ContainsAny(rest[:at], "/?#") {
			add(rest[:at])
		}
		rest = rest[at+1:]
	}
	if _, query, ok := strings.Cut(rest, "?"); ok {
		query, _, _ = strings.Cut(query, "#")
		for _, part := range strings.Split(query, "&") {
			if k, v, ok := strings.Cut(part, "="); ok && isSecretKey(unescapeQuery(k)) {
				add(v)
			}
		}
	}
	if u, err := url.Parse(raw); err == nil {
		if pw, ok := u.User.Password(); ok {
			addDecoded(pw)
		}
		q := u.Query()
		for k, vs := range q {
			if isSecretKey(k) {
				for _, v := range vs {
					addDecoded(v)
				}
			}
		}
	}
	out := slices.Collect(maps.Keys(seen))
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	return out
}

// redact returns msg with every secret replaced by xxxxx.
func redact(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, hidden)
	}
	return msg
}

// redactErr removes raw's credentials from err's text, whatever library
// produced it; errors.Is and errors.As still see err.
func redactErr(err error, raw string) error {
	msg := err.Error()
	clean := redact(msg, secrets(raw))
	if clean == msg {
		return err
	}
	return &redactedErr{err: err, msg: clean}
}

type redactedErr struct {
	err error
	msg string
}

func (r *redactedErr) Error() string { return r.msg }
func (r *redactedErr) Unwrap() error { return r.err }

func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// looksKeywordValue reports whether s starts like a libpq keyword/value
// string ("host=db user=app ..."), not like a URL.
func looksKeywordValue(s string) bool {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if i <= 0 {
		return false
	}
	return strings.HasPrefix(strings.TrimLeftFunc(s[i:], unicode.IsSpace), "=")
}

// pair is one key=value of a keyword/value string: value unquoted, raw as
// written.
type pair struct{ key, value, raw string }

// keywordValues splits a libpq keyword/value string: key = value pairs
// separated by spaces, a value either single-quoted ('a b', with \' and
// \\) or running to the next space (with \ escapes). ok is false when it
// does not follow those rules.
func keywordValues(s string) (pairs []pair, ok bool) {
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return pairs, true
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return pairs, false
		}
		key := strings.TrimSpace(s[:eq])
		if key == "" || strings.ContainsFunc(key, unicode.IsSpace) {
			return pairs, false
		}
		s = strings.TrimLeftFunc(s[eq+1:], unicode.IsSpace)
		var val strings.Builder
		i := 0
		if strings.HasPrefix(s, "'") {
			i = 1
			closed := false
			for i < len(s) && !closed {
				switch c := s[i]; {
				case c == '\\' && i+1 < len(s):
					val.WriteByte(s[i+1])
					i += 2
				case c == '\'':
					closed = true
					i++
				default:
					val.WriteByte(c)
					i++
				}
			}
			if !closed {
				return append(pairs, pair{key: key, value: val.String(), raw: s}), false
			}
		} else {
			for i < len(s) && !unicode.IsSpace(rune(s[i])) {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
		}
		pairs = append(pairs, pair{key: key, value: val.String(), raw: s[:i]})
		s = s[i:]
	}
}
