package lease

import "time"

// Revision identifies one stored version of a record. Stores assign it: it is
// strictly larger after every successful write to a name and is never reused
// for that name, not even after the store loses its data. The zero Revision
// means "no record": a compare-and-swap that expects it creates the record
// only if it is absent.
type Revision uint64

// Record is the lease record kept for one election name. Its shape follows
// Kubernetes' LeaderElectionRecord so that it maps onto a Lease.
//
// AcquiredAt, RenewedAt and Claim are for people to read; Tenure never uses
// them to decide who leads.
type Record[M any] struct {
	// Holder is the identity of the current leader, or "" once released.
	Holder string
	// Token is the fencing token of the current (or last) term. It strictly
	// increases every time anyone acquires the lease, including the same
	// holder acquiring it again after expiry or release.
	Token uint64
	// AcquiredAt is when the current term started (wall clock).
	AcquiredAt time.Time
	// RenewedAt is when the holder last renewed (wall clock).
	RenewedAt time.Time
	// LeaseDuration is what the holder promised: others may take the lease
	// once this much time has passed, by their own clock, since they first
	// saw the current revision.
	LeaseDuration time.Duration
	// Transitions counts the times leadership changed hands: it grows when a
	// term starts with a holder other than the one recorded before.
	Transitions uint64
	// Claim marks a record its holder does not lead on yet. On a store that
	// may lose records (store.Lossy), an elector that creates a record
	// holds only a claim: a leader whose record the store lost may still
	// believe it leads, so the creator follows its own record and takes it
	// over, with a new token and Claim false, once the claim has stood for
	// LeaseDuration. The elector sets Claim on such a create; a store that
	// vouches for the create (store.CreateVoucher), so that the creator leads
	// at once, stores it with Claim false. Every store persists it.
	//
	// Claim is informational only, like AcquiredAt: no elector reads it to
	// decide anything, and a record that says Claim wrongly changes nothing
	// but what people are shown.
	Claim bool
	// Successor, on a released record (Holder ""), names the one identity
	// that may take the lease over at once: a handover to a chosen
	// successor (lead's Elector.HandOver). Every other candidate treats
	// the record as held: it waits LeaseDuration, counted on its own clock
	// from when it first saw the record, before taking it over, so a
	// successor that never comes costs at most one lease. It is empty on a
	// held record and on a plain release. Every store persists it, and a
	// store's guarded swap (store.ReleaseGuard) checks it.
	Successor string
	// Stamp is a random value the writer draws afresh for every write
	// (lead draws 64 bits from crypto/rand), so that nobody can tell it
	// before the write exists. A store that keeps it (and shows it with
	// reads and watch events) lets a follower that heard a renewal on a
	// watch anyone may publish on, and then read that very write, count
	// its wait from the renewal's receipt (docs/design.md, "Quiet
	// followers"). 0 means none; a store that does not keep it returns 0,
	// which only makes followers count from their reads.
	Stamp uint64
	// Metadata is typed data attached by the holder.
	Metadata M
}

// Held reports whether the record names a holder.
func (r Record[M]) Held() bool { return r.Holder != "" }
