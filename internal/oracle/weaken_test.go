package oracle

import (
	"math"
	"slices"
	"testing"
)

// Each variant of the oracle changes one rule; the corpus must catch it:
// a widened rule (an excuse granted more often, a check dropped) passes
// an unsafe history the real oracle flags, a narrowed one flags a safe
// history the real oracle passes. wrongOn is every history the variant
// judges wrong.
var variants = []struct {
	name    string
	weaken  rule
	noBound bool // an excused overlap may last for ever
	wrongOn []string
}{
	{"excuse what the acquirer knew of", wIgnoreKnew, false, []string{
		"unsafe-kept-record-lost-seen", "unsafe-rolled-back-acquire-heard",
		"unsafe-seed8014-heard-renewals", "unsafe-takeover-in-rollback-wait"}},
	{"no bound on an excused overlap", 0, true, []string{
		"unsafe-forged-release-past-bound", "unsafe-overlap-past-bound"}},
	{"an erasure before both terms excuses", wErasureAnywhere, false, []string{
		"unsafe-erasure-before-both"}},
	{"a lossy store's loss is an erasure", wLossyLoss, false, []string{
		"unsafe-lossy-loss-no-erasure"}},
	{"any forged write is an erasure", wAnyForge, false, []string{
		"unsafe-forged-holder-takeover", "unsafe-forged-release-over-release"}},
	{"knowledge is the last revision delivered", wLastDelivery, false, []string{
		"unsafe-seed8014-heard-renewals"}},
	{"every erasure takes back every floor", wFloorsAlwaysTaken, false, []string{
		"unsafe-equal-tokens", "unsafe-lower-token-no-floor"}},
	{"overlap only at instants both were sampled", wSameInstant, false, []string{
		"unsafe-sampled-interval"}},
	{"a believed token need not be its own write's", wNoOwnWrite, false, []string{
		"unsafe-own-token-not-stored"}},
	{"two terms may share a token", wEqualTokens, false, []string{
		"unsafe-equal-tokens"}},
	{"an erasure that forgot nothing excuses", wNoopErasure, false, []string{
		"unsafe-forged-release-over-release", "unsafe-noop-restore", "unsafe-noop-rollback"}},
	{"a forged delivery is knowledge", sForgedKnowledge, false, []string{
		"safe-forged-watch-event"}},
	{"a restart keeps what it was told", sBootKeeps, false, []string{
		"safe-restart-knows-nothing"}},
	{"no erasure excuses an overlap", sNoExcuse, false, []string{
		"safe-aba-unseen", "safe-forged-release-within-bound", "safe-forged-watch-event",
		"safe-restart-knows-nothing", "safe-tie-write-then-rollback"}},
	{"no erasure takes back a floor", sFloorsKept, false, []string{
		"safe-restore-takes-ahead-floor"}},
}

func newVariant(p Params, w rule, noBound bool) *Oracle {
	o := New(p)
	o.weaken = w
	if noBound {
		o.bound = math.MaxInt64 / 4
	}
	return o
}

func TestCorpusCatchesEveryChangedRule(t *testing.T) {
	corpus := loadCorpus(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			var wrong []string
			for _, h := range corpus {
				o, err := h.run(newVariant(h.params, v.weaken, v.noBound))
				if err != nil {
					t.Fatal(err)
				}
				got := verdict(o)
				if slices.Equal(got, h.want) {
					continue
				}
				wrong = append(wrong, h.name)
				// A widened rule only lets more through, a narrowed one
				// only flags more.
				if widened := v.noBound || v.weaken < sForgedKnowledge; widened != (len(got) < len(h.want)) {
					t.Errorf("%s: breaks %q, want %q: the variant changes the verdict the wrong way", h.name, got, h.want)
				}
			}
			if !slices.Equal(wrong, v.wrongOn) {
				t.Errorf("judges wrong %q, want exactly %q", wrong, v.wrongOn)
			}
		})
	}
}

func TestEveryRuleHasAVariant(t *testing.T) {
	var all rule
	for _, v := range variants {
		all |= v.weaken
	}
	if want := sFloorsKept<<1 - 1; all != want {
		t.Fatalf("rules with variants %b, want %b", all, want)
	}
}
