package lead

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func names(prefix string, n int) []Shard {
	out := make([]Shard, n)
	for i := range out {
		out[i] = Shard{Name: fmt.Sprintf("%s%02d", prefix, i)}
	}
	return out
}

// loads counts the weight assigned to each member.
func loads(shards []Shard, a map[string]string) map[string]int {
	out := map[string]int{}
	for _, s := range shards {
		out[a[s.Name]] += s.weight()
	}
	return out
}

// movesOf counts the shards held by a member that a assigns to another.
func movesOf(holders, a map[string]string, members []string) int {
	n := 0
	for s, h := range holders {
		if slices.Contains(members, h) && a[s] != h {
			n++
		}
	}
	return n
}

func TestAssignSpreadsAndKeepsHolders(t *testing.T) {
	six := names("s", 6)
	tests := []struct {
		name    string
		shards  []Shard
		members []string
		holders map[string]string
		want    map[string]int // shards per member
		moves   int
	}{
		{name: "no members, nothing assigned", shards: six, want: map[string]int{}},
		{name: "fresh start splits evenly", shards: six, members: []string{"a", "b", "c"}, want: map[string]int{"a": 2, "b": 2, "c": 2}},
		{name: "remainder goes to the first by name", shards: names("s", 7), members: []string{"b", "a", "c"}, want: map[string]int{"a": 3, "b": 2, "c": 2}},
		{
			name: "a joiner takes only the excess", shards: six, members: []string{"a", "b", "c"},
			holders: map[string]string{"s00": "a", "s01": "a", "s02": "a", "s03": "b", "s04": "b", "s05": "b"},
			want:    map[string]int{"a": 2, "b": 2, "c": 2}, moves: 2,
		},
		{
			name: "a leaver's shards go to those below their share", shards: six, members: []string{"a", "b"},
			holders: map[string]string{"s00": "a", "s01": "a", "s02": "b", "s03": "b", "s04": "c", "s05": "c"},
			want:    map[string]int{"a": 3, "b": 3}, moves: 0,
		},
		{
			name: "the extra share goes to the member holding most", shards: names("s", 7), members: []string{"a", "b", "c"},
			holders: map[string]string{"s00": "c", "s01": "c", "s02": "c", "s03": "b", "s04": "b"},
			want:    map[string]int{"a": 2, "b": 2, "c": 3}, moves: 0,
		},
		{
			name: "balanced holders stay put", shards: six, members: []string{"a", "b", "c"},
			holders: map[string]string{"s00": "a", "s01": "b", "s02": "c", "s03": "a", "s04": "b", "s05": "c"},
			want:    map[string]int{"a": 2, "b": 2, "c": 2}, moves: 0,
		},
		{
			name: "weights spread the load", shards: []Shard{{"h", 4}, {"l1", 1}, {"l2", 1}, {"l3", 1}, {"l4", 1}}, members: []string{"a", "b"},
			want: map[string]int{"a": 4, "b": 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assign(tt.shards, tt.members, tt.holders)
			if len(tt.members) > 0 && len(a) != len(tt.shards) {
				t.Fatalf("assigned %d shards of %d: %v", len(a), len(tt.shards), a)
			}
			delete(a, "")
			got := loads(tt.shards, a)
			if len(tt.members) == 0 {
				got = map[string]int{}
				if len(a) != 0 {
					t.Fatalf("assigned with no members: %v", a)
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("loads %v, want %v (assignment %v)", got, tt.want, a)
			}
			if m := movesOf(tt.holders, a, tt.members); m != tt.moves {
				t.Errorf("%d moves, want %d (assignment %v)", m, tt.moves, a)
			}
		})
	}
}

// drawCase draws shards, members and holders (some of them not members).
func drawCase(t *rapid.T, weighted bool) ([]Shard, []string, map[string]string) {
	n := rapid.IntRange(0, 60).Draw(t, "shards")
	shards := names("s", n)
	if weighted {
		for i := range shards {
			shards[i].Weight = rapid.IntRange(0, 9).Draw(t, "weight")
		}
	}
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	members := rapid.SliceOfDistinct(rapid.SampledFrom(ids), rapid.ID).Draw(t, "members")
	holders := map[string]string{}
	for _, s := range shards {
		if h := rapid.SampledFrom(append(ids, "")).Draw(t, "holder"); h != "" {
			holders[s.Name] = h
		}
	}
	return shards, members, holders
}

func TestAssignPropertiesEqualWeights(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shards, members, holders := drawCase(t, false)
		a := assign(shards, members, holders)
		if len(members) == 0 {
			if len(a) != 0 {
				t.Fatalf("assigned with no members: %v", a)
			}
			return
		}
		// Every shard goes to a member.
		for _, s := range shards {
			if !slices.Contains(members, a[s.Name]) {
				t.Fatalf("shard %s assigned to %q, not a member", s.Name, a[s.Name])
			}
		}
		// Balance: ⌊N/M⌋ or ⌈N/M⌉ each.
		n, m := len(shards), len(members)
		l := loads(shards, a)
		for _, id := range members {
			if l[id] < n/m || l[id] > (n+m-1)/m {
				t.Fatalf("member %s leads %d of %d shards over %d members: %v", id, l[id], n, m, l)
			}
		}
		// Fewest moves: a member keeps min(held, its share), and the
		// ⌈N/M⌉ shares go to those that hold the most.
		held := map[string]int{}
		for _, h := range holders {
			if slices.Contains(members, h) {
				held[h]++
			}
		}
		counts := make([]int, 0, m)
		for _, id := range members {
			counts = append(counts, held[id])
		}
		slices.SortFunc(counts, func(x, y int) int { return y - x })
		least := 0
		for rank, c := range counts {
			share := n / m
			if rank < n%m {
				share++
			}
			least += max(0, c-share)
		}
		if got := movesOf(holders, a, members); got != least {
			t.Fatalf("%d moves, the fewest possible is %d", got, least)
		}
		// Determinism: the order of the inputs does not matter.
		rs, rm := slices.Clone(shards), slices.Clone(members)
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		r.Shuffle(len(rm), func(i, j int) { rm[i], rm[j] = rm[j], rm[i] })
		if b := assign(rs, rm, maps.Clone(holders)); !maps.Equal(a, b) {
			t.Fatalf("the order of the inputs changed the assignment:\n%v\n%v", a, b)
		}
		// Stability: assigning again with the holders it chose moves
		// nothing.
		if b := assign(shards, members, a); !maps.Equal(a, b) {
			t.Fatalf("the assignment does not keep itself:\n%v\n%v", a, b)
		}
	})
}

func TestAssignPropertiesWeighted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shards, members, holders := drawCase(t, true)
		a := assign(shards, members, holders)
		if len(members) == 0 {
			return
		}
		heaviest, total := 0, 0
		for _, s := range shards {
			heaviest = max(heaviest, s.weight())
			total += s.weight()
			if !slices.Contains(members, a[s.Name]) {
				t.Fatalf("shard %s assigned to %q, not a member", s.Name, a[s.Name])
			}
		}
		l := loads(shards, a)
		lo, hi := total, 0
		for _, id := range members {
			lo, hi = min(lo, l[id]), max(hi, l[id])
		}
		if len(shards) > 0 && hi-lo >= 2*heaviest {
			t.Fatalf("loads %v differ by %d, the heaviest shard weighs %d", l, hi-lo, heaviest)
		}
		// Settling: assigning again with the shards where they were sent
		// reaches an assignment that keeps itself within a few rounds.
		b := a
		for round := 0; ; round++ {
			c := assign(shards, members, b)
			if maps.Equal(b, c) {
				break
			}
			if round == 3 {
				t.Fatalf("no fixed point after %d rounds:\n%v\n%v", round, b, c)
			}
			b = c
		}
	})
}

// Weights near the largest int do not wrap a member's load: a held shard
// that would take its holder past the limit goes elsewhere, and so do the
// free ones.
func TestAssignWeightsNearTheLargestInt(t *testing.T) {
	const big = 1 << 62
	got := assign([]Shard{{Name: "a", Weight: big}, {Name: "b", Weight: big}, {Name: "c", Weight: 1}},
		[]string{"m1", "m2"}, map[string]string{"a": "m1", "b": "m1"})
	if got["a"] == got["b"] {
		t.Errorf("assign = %v: both shards of weight 2^62 on %s", got, got["a"])
	}
}
