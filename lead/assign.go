package lead

import (
	"cmp"
	"slices"
)

// Shard is one shard of a Shards: an election name and the share of the
// work it stands for.
type Shard struct {
	// Name is the shard's election name in the store.
	Name string
	// Weight is how much work the shard stands for, relative to the
	// others: a replica's load is the sum of its shards' weights. Zero
	// counts as 1.
	Weight int
}

// weight is s's weight, 1 when unset.
func (s Shard) weight() int { return max(s.Weight, 1) }

// assign returns the target assignment of shards to members: for each
// shard, the member that should lead it. It is a pure function of its
// inputs (the order of shards and members does not matter), so every
// replica that sees the same membership and holders computes the same
// assignment.
//
// It is sticky: a shard held by a member stays with it while the balance
// allows. With equal weights each member gets ⌊N/M⌋ or ⌈N/M⌉ shards, the
// members that hold the most get the ⌈N/M⌉, and of the shards members
// hold, the fewest possible change hands (the excess of each member over
// its share); shards held by no member go to the members below their
// share. With weights, held shards are kept (heaviest first) while the
// member's load stays within ⌈W/M⌉, and the others go, heaviest first, to
// the member with the lightest load: loads then differ by less than twice
// the heaviest weight, and assigning again with the shards where they were
// sent moves a few more at most, once or twice. holders maps a shard's name to the
// identity that holds it; holders that are not members count as none.
// With no members, the assignment is empty.
func assign(shards []Shard, members []string, holders map[string]string) map[string]string {
	out := make(map[string]string, len(shards))
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	if len(ms) == 0 {
		return out
	}
	ss := slices.Clone(shards)
	slices.SortFunc(ss, func(a, b Shard) int { return cmp.Compare(a.Name, b.Name) })
	ss = slices.CompactFunc(ss, func(a, b Shard) bool { return a.Name == b.Name })
	idx := make(map[string]int, len(ms))
	for i, m := range ms {
		idx[m] = i
	}
	held := make([][]Shard, len(ms))
	var free []Shard
	equal := true
	total := 0
	for _, s := range ss {
		equal = equal && s.weight() == ss[0].weight()
		total = satAddInt(total, s.weight())
		if i, ok := idx[holders[s.Name]]; ok {
			held[i] = append(held[i], s)
		} else {
			free = append(free, s)
		}
	}
	if equal {
		return assignEqual(ss, ms, held, free, out)
	}
	return assignWeighted(ms, held, free, total, out)
}

// assignEqual is assign for shards of equal weight: exact balance, fewest
// moves.
func assignEqual(ss []Shard, ms []string, held [][]Shard, free []Shard, out map[string]string) map[string]string {
	n, m := len(ss), len(ms)
	base, extra := n/m, n%m
	// The ⌈N/M⌉ shares go to the members that hold the most (by name on a
	// tie): that keeps the most shards where they are.
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(held[b]), len(held[a])) })
	quota := make([]int, m)
	for rank, i := range order {
		quota[i] = base
		if rank < extra {
			quota[i]++
		}
	}
	for i, hs := range held {
		keep := min(len(hs), quota[i])
		for _, s := range hs[:keep] {
			out[s.Name] = ms[i]
		}
		free = append(free, hs[keep:]...)
		quota[i] -= keep
	}
	slices.SortFunc(free, func(a, b Shard) int { return cmp.Compare(a.Name, b.Name) })
	i := 0
	for _, s := range free {
		for quota[i] == 0 {
			i++
		}
		out[s.Name] = ms[i]
		quota[i]--
	}
	return out
}

// assignWeighted is assign for shards of unequal weights.
func assignWeighted(ms []string, held [][]Shard, free []Shard, total int, out map[string]string) map[string]string {
	m := len(ms)
	limit := total / m
	if total%m != 0 {
		limit++
	}
	heavyFirst := func(a, b Shard) int {
		if c := cmp.Compare(b.weight(), a.weight()); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	}
	load := make([]int, m)
	for i, hs := range held {
		slices.SortFunc(hs, heavyFirst)
		for _, s := range hs {
			if satAddInt(load[i], s.weight()) <= limit {
				out[s.Name] = ms[i]
				load[i] += s.weight()
			} else {
				free = append(free, s)
			}
		}
	}
	slices.SortFunc(free, heavyFirst)
	for _, s := range free {
		i := 0
		for j := 1; j < m; j++ {
			if load[j] < load[i] {
				i = j
			}
		}
		out[s.Name] = ms[i]
		load[i] = satAddInt(load[i], s.weight())
	}
	return out
}

// satAddInt returns a+b for non-negative a and b, saturating at the largest
// int.
func satAddInt(a, b int) int {
	if a > int(^uint(0)>>1)-b {
		return int(^uint(0) >> 1)
	}
	return a + b
}
