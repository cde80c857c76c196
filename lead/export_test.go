package lead

// ReleaseWithoutWaiting makes e release its lease as soon as a term ends,
// without waiting for the term's bodies: the unsafe variant, which the
// drain tests must catch. Call it before e runs.
func ReleaseWithoutWaiting[M any](e *Elector[M]) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releaseEarly = true
}

// MetadataFromReadsOnly makes e's MetadataChanges channels report only the
// records e accepts from its reads and swaps, nothing from its watch: the
// variant the metadata tests must catch. Call it before e runs.
func MetadataFromReadsOnly[M any](e *Elector[M]) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.metadataFromReadsOnly = true
}

// ShardsVariant turns on an unsafe variant of s, which the shards tests
// must catch: "body-outlives-term" (a shard's body keeps running after
// its term, and the release does not wait for it), "campaign-all" (the
// replica campaigns for every shard and releases none), "move-slot-kept"
// (a release that is over keeps its place among MaxMoves), "look-late"
// (a replica that gets its presence slot looks again only an Every later),
// "follow-late" (a shard another replica holds is followed only once
// membership has held for an Every), "count-on-term" (a replica looks
// again when its presence slot's term begins, not when its record names
// it), "take-free-at-once" (a free shard is taken without waiting for
// membership to hold for an Every), "move-on-release" (a move releases
// the shard without naming the receiver, and gives its place among
// MaxMoves back once the release is stored, not once the receiver leads).
// Call it before Run.
func ShardsVariant[M any](s *Shards[M], variant string) {
	on, ok := map[string]*bool{
		"body-outlives-term": &s.hook.bodyOutlivesTerm,
		"campaign-all":       &s.hook.campaignAll,
		"move-slot-kept":     &s.hook.moveSlotKept,
		"look-late":          &s.hook.lookLate,
		"follow-late":        &s.hook.followLate,
		"count-on-term":      &s.hook.countOnTerm,
		"take-free-at-once":  &s.hook.takeFreeAtOnce,
		"move-on-release":    &s.hook.moveOnRelease,
	}[variant]
	if !ok {
		panic("unknown variant " + variant)
	}
	*on = true
}
