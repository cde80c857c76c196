package main

import (
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// hiddenArg replaces a secret in what tenure prints.
const hiddenArg = "xxxxx"

// An argument may hold a secret where tenure echoes it (an unknown
// command, an argument where none belongs, a flag value that cannot be
// parsed): a store URL with its password typed where a NAME belongs, or a
// bare token passed where a flag value was expected. redactor hides them in
// everything tenure itself writes to stderr; the command tenure run starts
// writes to the real stderr, not through it.

// redactor is an io.Writer that writes to w with every secret of the
// arguments replaced (see argSecrets).
type redactor struct {
	w        io.Writer
	replacer *strings.Replacer
}

// newRedactor returns w wrapped so that nothing written through it shows a
// secret found in args or in TENURE_STORE, or w itself when there is none.
func newRedactor(w io.Writer, args []string) io.Writer {
	var secrets []argSecret
	for _, a := range append(slices.Clone(args), os.Getenv(storeEnv)) {
		for _, s := range argSecrets(a) {
			secrets = append(secrets, s)
			// As %q shows it, and as shellQuote does, when that differs.
			if q := strconv.Quote(s.secret); q[1:len(q)-1] != s.secret {
				secrets = append(secrets, argSecret{q[1 : len(q)-1], s.shown})
			}
			if q := strings.ReplaceAll(s.secret, "'", `'\''`); q != s.secret {
				secrets = append(secrets, argSecret{q, s.shown})
			}
		}
	}
	if len(secrets) == 0 {
		return w
	}
	// Longest first: a whole URL before the password inside it.
	slices.SortStableFunc(secrets, func(a, b argSecret) int { return len(b.secret) - len(a.secret) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s.secret, s.shown)
	}
	return &redactor{w: w, replacer: strings.NewReplacer(pairs...)}
}

func (r *redactor) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.replacer.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// argSecret is a secret in an argument and what to show in its place.
type argSecret struct{ secret, shown string }

// minSecret is the shortest part of an argument (a password in a URL, a
// password= value) hidden wherever it appears; a shorter one is hidden
// only with the whole argument around it, lest every "a" be replaced.
const minSecret = 4

// argSecrets returns the secrets in one argument (or in the value of a
// --flag=value argument): a URL's password, the value of a password=
// (token=, secret=) query parameter or keyword/value pair, and an argument
// that looks like a bare secret (looksSecret) as a whole.
func argSecrets(arg string) []argSecret {
	if _, v, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
		return append(argSecrets(v), argSecretsOf(arg)...)
	}
	return argSecretsOf(arg)
}

func argSecretsOf(arg string) []argSecret {
	var parts []string // the secrets inside arg, of any length
	if _, rest, ok := strings.Cut(arg, "://"); ok {
		// The userinfo ends at the last '@': a password may hold '@', '/',
		// '?' or '#', and hiding too much is the safe mistake.
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok && pw != "" {
				parts = append(parts, pw)
				if u, err := url.Parse(arg); err == nil {
					if p, ok := u.User.Password(); ok && p != pw {
						parts = append(parts, p) // as unescaped
					}
				}
			}
		}
	}
	for _, field := range strings.FieldsFunc(arg, func(r rune) bool { return unicode.IsSpace(r) || r == '&' || r == '?' }) {
		if k, v, ok := strings.Cut(field, "="); ok && isSecretParam(k) {
			if v = strings.Trim(v, `'"`); v != "" {
				parts = append(parts, v)
			}
		}
	}
	var out []argSecret
	if len(parts) > 0 {
		// The whole argument, with every secret in it hidden: the only
		// place where a short one is.
		shown := arg
		for _, p := range parts {
			shown = strings.ReplaceAll(shown, p, hiddenArg)
		}
		out = append(out, argSecret{arg, shown})
		for _, p := range parts {
			if len(p) >= minSecret {
				out = append(out, argSecret{p, hiddenArg})
			}
		}
	}
	if looksSecret(arg) {
		out = append(out, argSecret{arg, hiddenArg})
	}
	return out
}

// isSecretParam reports whether a query parameter or keyword names a
// credential.
func isSecretParam(k string) bool {
	switch strings.ToLower(k) {
	case "password", "sslpassword", "token", "secret":
		return true
	}
	return false
}

// looksSecret reports whether arg looks like a bare secret (an API token,
// a key, a password): at least 16 characters, none a space, with an upper
// case letter, a lower case letter and a digit. Election names, commands,
// paths and durations are rarely like that, and hiding one of them in a
// message is the safe mistake.
func looksSecret(arg string) bool {
	if len(arg) < 16 || strings.HasPrefix(arg, "-") {
		return false
	}
	var upper, lower, digit bool
	for _, r := range arg {
		switch {
		case unicode.IsSpace(r):
			return false
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		case unicode.IsDigit(r):
			digit = true
		}
	}
	return upper && lower && digit
}
