package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text from a store is untrusted: anyone who can write the store can put
// escape sequences or line breaks in a holder or in metadata, to recolour a
// terminal or fake a line of output. Everything printed from a record or an
// error goes through these functions.

// printable returns s as it is when every character is printable, and
// otherwise quoted with Go's escapes (strconv.Quote), so that nothing in it
// acts on a terminal and it is plainly not a plain value.
func printable(s string) string {
	if isPrintable(s) {
		return s
	}
	return strconv.Quote(s)
}

// field returns s as the value of a key=value pair on a line of fields:
// as printable gives it, and quoted also when it holds a space, an equals
// sign or a quote, or is empty, so that a holder such as "a token=99"
// cannot pass for fields of its own.
func field(s string) string {
	if s != "" && isPrintable(s) && !strings.ContainsAny(s, " =\"") {
		return s
	}
	return strconv.Quote(s)
}

func isPrintable(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// oneLine returns an error message on one line with every character that
// is not printable escaped in place: line breaks become "; ".
func oneLine(msg string) string {
	if isPrintable(msg) {
		return msg
	}
	var b strings.Builder
	for i, r := range msg {
		switch {
		case r == '\n':
			b.WriteString("; ")
		case r == utf8.RuneError && isInvalidAt(msg, i):
			fmt.Fprintf(&b, `\x%02x`, msg[i])
		case strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

func isInvalidAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 1
}

// safeJSON returns JSON text compacted onto one line, with every character
// that is not printable written as a \u escape, which leaves it valid JSON
// meaning the same (such characters can only be inside strings). Text that
// is not valid JSON is quoted as a Go string instead.
func safeJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return strconv.Quote(string(raw))
	}
	b := buf.Bytes()
	if isPrintable(string(b)) {
		return string(b)
	}
	var out strings.Builder
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out.WriteString(`\ufffd`)
		case strconv.IsPrint(r):
			out.Write(b[i : i+n])
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
		i += n
	}
	return out.String()
}

// writeJSONLine writes v as one line of JSON that is safe on a terminal.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", safeJSON(b))
	return err
}
