package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// Snippet is one ```go fenced block of a Markdown document.
type Snippet struct {
	// File names the document, as given to Extract.
	File string
	// Line is the line of the opening fence, from 1.
	Line int
	// Code is the block's text without the fences, with the fence's
	// indentation taken off every line.
	Code string
	// Skip is the reason given by a <!-- not compiled: REASON --> comment
	// on the line above the fence (blank lines between allowed); "" when
	// the block is to be compiled.
	Skip string
}

// String names the snippet as file:line of its fence.
func (s Snippet) String() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

var skipComment = regexp.MustCompile(`^<!--\s*not compiled:\s*(.*?)\s*-->$`)

// Extract returns the ```go fenced blocks of the Markdown document data,
// in order. A fence left open at the end of the document is an error.
func Extract(file string, data []byte) ([]Snippet, error) {
	lines := strings.Split(string(data), "\n")
	var out []Snippet
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " \t")
		if !isGoFence(trimmed) {
			if strings.HasPrefix(trimmed, "```") {
				// Another language's block: skip to its end, so that a
				// ```go inside it is not taken for a fence.
				for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				}
			}
			continue
		}
		indent := lines[i][:len(lines[i])-len(trimmed)]
		s := Snippet{File: file, Line: i + 1}
		reason, marked := skipReason(lines[:i])
		if marked && reason == "" {
			return out, fmt.Errorf("%s:%d: the not-compiled comment above the fence gives no reason", file, s.Line)
		}
		s.Skip = reason
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "```" {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return out, fmt.Errorf("%s:%d: the ```go fence is never closed", file, s.Line)
		}
		s.Code = strings.Join(body, "\n") + "\n"
		out = append(out, s)
	}
	return out, nil
}

// isGoFence reports whether line (without its indentation) opens a Go
// block: ```go, possibly followed by attributes.
func isGoFence(line string) bool {
	rest, ok := strings.CutPrefix(line, "```go")
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t')
}

// skipReason returns the reason of a not-compiled comment on the last
// non-blank line of above, and whether there is such a comment.
func skipReason(above []string) (reason string, marked bool) {
	for i := len(above) - 1; i >= 0; i-- {
		l := strings.TrimSpace(above[i])
		if l == "" {
			continue
		}
		if m := skipComment.FindStringSubmatch(l); m != nil {
			return m[1], true
		}
		return "", false
	}
	return "", false
}
