package main

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/tenure-go/tenure/store"
)

// The table of elections that tenure ls prints: one row per record listed
// (store.Lister), every field made safe for a terminal.

// listRow is one row of the table, every cell printable.
type listRow struct {
	Name, Holder, Token, Since, Renewed, Transitions, Metadata string
}

// listHeader is the table's first row.
var listHeader = listRow{"NAME", "HOLDER", "TOKEN", "SINCE", "RENEWED", "TRANSITIONS", "METADATA"}

// maxCellRunes is the widest a metadata or error cell is printed; longer
// text is cut and ends with "…".
const maxCellRunes = 40

// listRows returns the rows of l as of now. The holder of a released
// record reads "(released)"; a claim (its holder does not lead yet) is
// marked "(claim)", and a lease whose holder has not renewed it for its
// LeaseDuration, by now, "(expired)". A record that cannot be read reads
// "(unreadable)", with why in place of the metadata. SINCE is the age of
// the term (AcquiredAt), RENEWED the age of the last renewal.
func listRows(l []store.Listed[rawMeta], now time.Time) []listRow {
	rows := make([]listRow, 0, len(l))
	for _, x := range l {
		r := listRow{Name: printable(x.Name), Token: "-", Since: "-", Renewed: "-", Transitions: "-"}
		if x.Err != nil {
			r.Holder = "(unreadable)"
			r.Metadata = truncate(oneLine(x.Err.Error()), maxCellRunes)
			rows = append(rows, r)
			continue
		}
		rec := x.Record
		switch {
		case !rec.Held() && rec.Successor != "":
			r.Holder = "(released to " + printable(rec.Successor) + ")"
		case !rec.Held():
			r.Holder = "(released)"
		default:
			r.Holder = printable(rec.Holder)
			if rec.Claim {
				r.Holder += " (claim)"
			}
			if !rec.RenewedAt.IsZero() && now.Sub(rec.RenewedAt) > rec.LeaseDuration {
				r.Holder += " (expired)"
			}
		}
		r.Token = strconv.FormatUint(rec.Token, 10)
		r.Transitions = strconv.FormatUint(rec.Transitions, 10)
		if !rec.AcquiredAt.IsZero() {
			r.Since = formatAge(now.Sub(rec.AcquiredAt))
		}
		if !rec.RenewedAt.IsZero() {
			r.Renewed = formatAge(now.Sub(rec.RenewedAt))
		}
		r.Metadata = "-"
		if m := string(rec.Metadata); m != "" && m != "null" {
			r.Metadata = truncate(safeJSON(rec.Metadata), maxCellRunes)
		}
		rows = append(rows, r)
	}
	return rows
}

// writeListTable writes rows under listHeader, in aligned columns.
func writeListTable(w io.Writer, rows []listRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range append([]listRow{listHeader}, rows...) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Holder, r.Token, r.Since, r.Renewed, r.Transitions, r.Metadata)
	}
	return tw.Flush()
}

// formatAge renders an age compactly, to two units at most: 9s, 4m05s,
// 3h07m, 12d04h. A negative age (a time ahead of this machine's clock)
// gets a minus sign.
func formatAge(d time.Duration) string {
	if d < 0 {
		if d == time.Duration(-1<<63) {
			d++
		}
		return "-" + formatAge(-d)
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
	}
}

// truncate cuts s to at most n runes, the last one "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// listSorts are the orders tenure ls sorts by (--sort), the first the
// default. Ties go by name.
var listSorts = []string{"name", "holder", "since", "renewed", "token"}

// sortListed sorts l by the key by (one of listSorts): name; holder;
// since, the oldest term first; renewed, the longest unrenewed first;
// token, the lowest first. By any key but the name, records that cannot
// be read, and times that are zero, sort last.
func sortListed(l []store.Listed[rawMeta], by string) error {
	if !slices.Contains(listSorts, by) {
		return fmt.Errorf("--sort is %q, want one of %s", by, strings.Join(listSorts, ", "))
	}
	unreadable := func(x store.Listed[rawMeta]) int {
		if x.Err != nil {
			return 1
		}
		return 0
	}
	zeroLast := func(a, b time.Time) int {
		if a.IsZero() || b.IsZero() {
			return cmp.Compare(boolInt(a.IsZero()), boolInt(b.IsZero()))
		}
		return a.Compare(b)
	}
	slices.SortStableFunc(l, func(a, b store.Listed[rawMeta]) int {
		var c int
		if by != "name" {
			c = cmp.Compare(unreadable(a), unreadable(b))
		}
		if c == 0 {
			switch by {
			case "holder":
				c = strings.Compare(a.Record.Holder, b.Record.Holder)
			case "since":
				c = zeroLast(a.Record.AcquiredAt, b.Record.AcquiredAt)
			case "renewed":
				c = zeroLast(a.Record.RenewedAt, b.Record.RenewedAt)
			case "token":
				c = cmp.Compare(a.Record.Token, b.Record.Token)
			}
		}
		if c == 0 {
			c = strings.Compare(a.Name, b.Name)
		}
		return c
	})
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// globMatcher returns a matcher of names against the glob pattern: '*'
// matches any run of characters ('/' included), '?' any one character,
// [abc], [a-z] and [!abc] a character of (or not of) the class, and '\'
// makes the next character plain. It fails on a pattern with an
// unterminated class or a trailing '\'.
func globMatcher(pattern string) (func(string) bool, error) {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 == len(pattern) {
				return nil, fmt.Errorf("--match %q ends in a lone '\\'", pattern)
			}
			i++
			r, n := utf8.DecodeRuneInString(pattern[i:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += n - 1
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end == 0 { // "[]...]": a ']' first is part of the class
				if e := strings.IndexByte(pattern[i+2:], ']'); e >= 0 {
					end = e + 1
				} else {
					end = -1
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("--match %q has a '[' without its ']'", pattern)
			}
			class := pattern[i+1 : i+1+end]
			neg := strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^")
			if neg {
				class = class[1:]
			}
			b.WriteByte('[')
			if neg {
				b.WriteByte('^')
			}
			for _, r := range class {
				if r == '-' {
					b.WriteByte('-')
					continue
				}
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
			b.WriteByte(']')
			i += end + 1
		default:
			r, n := utf8.DecodeRuneInString(pattern[i:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += n - 1
		}
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("--match %q is not a valid pattern: %v", pattern, err)
	}
	return re.MatchString, nil
}
