package mutants

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Errors returned by this package.
var (
	// ErrStale: a mutant's original text does not occur exactly once in
	// its file, so the code under it changed and the entry must be updated.
	ErrStale = errors.New("mutants: original text does not occur exactly once")
	// ErrInvalid: a catalogue entry lacks a field or repeats a name.
	ErrInvalid = errors.New("mutants: invalid catalogue entry")
)

// Mutant is one deliberate unsafe change: in File, Original (which must
// occur exactly once) replaced by Replacement.
type Mutant struct {
	// Name is short and unique, e.g. "fsm-no-rollback-hold".
	Name string
	// File is the file changed, relative to the repository's root.
	File string
	// Original is the exact text replaced; Replacement what replaces it.
	Original, Replacement string
	// Reason says, in one sentence, why the change is unsafe.
	Reason string
	// Packages are the packages whose tests are expected to catch it, as
	// patterns relative to the root module ("./fsm").
	Packages []string
	// Tests, if set, is a -run pattern of the tests expected to catch it:
	// they run first, then the whole of Packages.
	Tests string
	// Fast marks the entries of the fast subset (MUTANTS=fast).
	Fast bool
}

// Validate checks that every field a run needs is set.
func (m Mutant) Validate() error {
	var missing []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"Name", m.Name != ""},
		{"File", m.File != ""},
		{"Original", m.Original != ""},
		{"Reason", strings.TrimSpace(m.Reason) != ""},
		{"Packages", len(m.Packages) > 0},
	} {
		if !f.ok {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %q: %s empty", ErrInvalid, m.Name, strings.Join(missing, ", "))
	}
	if m.Original == m.Replacement {
		return fmt.Errorf("%w: %q: Replacement equals Original", ErrInvalid, m.Name)
	}
	for _, p := range m.Packages {
		if !strings.HasPrefix(p, "./") {
			return fmt.Errorf("%w: %q: package %q is not a pattern relative to the root (./dir)", ErrInvalid, m.Name, p)
		}
	}
	return nil
}

// Apply returns src with m applied, or an error wrapping ErrStale if m's
// original text does not occur in src exactly once.
func (m Mutant) Apply(src string) (string, error) {
	if n := strings.Count(src, m.Original); n != 1 {
		return "", fmt.Errorf("%w: %s: %q occurs %d times in %s", ErrStale, m.Name, firstLine(m.Original), n, m.File)
	}
	return strings.Replace(src, m.Original, m.Replacement, 1), nil
}

// ApplyIn applies m to its file under root and returns a function that
// puts the file back.
func (m Mutant) ApplyIn(root string) (restore func() error, err error) {
	path := filepath.Join(root, filepath.FromSlash(m.File))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	mutated, err := m.Apply(string(b))
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(mutated), fi.Mode().Perm()); err != nil {
		return nil, err
	}
	return func() error { return os.WriteFile(path, b, fi.Mode().Perm()) }, nil
}

// Check validates every entry of c and that names are unique.
func Check(c []Mutant) error {
	var errs []error
	seen := map[string]bool{}
	for _, m := range c {
		if err := m.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[m.Name] {
			errs = append(errs, fmt.Errorf("%w: name %q repeated", ErrInvalid, m.Name))
		}
		seen[m.Name] = true
	}
	return errors.Join(errs...)
}

// Fast returns the entries of c in the fast subset.
func Fast(c []Mutant) []Mutant {
	var out []Mutant
	for _, m := range c {
		if m.Fast {
			out = append(out, m)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
