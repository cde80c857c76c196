package sim

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
)

// SeedRange is the seeds First to Last, both included.
type SeedRange struct {
	// First is the range's first seed.
	First uint64
	// Last is its last seed, at least First.
	Last uint64
}

// Seeds is a list of seeds to run, as ranges in the order given.
type Seeds []SeedRange

// ParseSeeds reads a comma-separated list of seeds and ranges, such as
// "1-100,200,300-310". A range is inclusive and must not run backwards;
// seeds may repeat. An empty or malformed list is an error wrapping
// ErrInvalidSeeds.
func ParseSeeds(s string) (Seeds, error) {
	var out Seeds
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%w: %q has an empty entry", ErrInvalidSeeds, s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a seed or a range such as 1-100", ErrInvalidSeeds, part)
		}
		last := first
		if isRange {
			last, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not a seed or a range such as 1-100", ErrInvalidSeeds, part)
			}
			if last < first {
				return nil, fmt.Errorf("%w: range %q runs backwards", ErrInvalidSeeds, part)
			}
		}
		out = append(out, SeedRange{First: first, Last: last})
	}
	return out, nil
}

// Len returns the number of seeds in the list (repeats counted), capped
// at the largest uint64.
func (s Seeds) Len() uint64 {
	var n uint64
	for _, r := range s {
		k := r.Last - r.First + 1
		if k == 0 || n+k < n { // the whole uint64 range, or overflow
			return ^uint64(0)
		}
		n += k
	}
	return n
}

// All returns the seeds in order.
func (s Seeds) All() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		for _, r := range s {
			for seed := r.First; ; seed++ {
				if !yield(seed) {
					return
				}
				if seed == r.Last {
					break
				}
			}
		}
	}
}

// String writes the list as ParseSeeds reads it.
func (s Seeds) String() string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(r.First, 10))
		if r.Last != r.First {
			b.WriteByte('-')
			b.WriteString(strconv.FormatUint(r.Last, 10))
		}
	}
	return b.String()
}
