// Package tenureotel exports what Tenure's electors do through
// OpenTelemetry: the metrics of package metrics, named by OpenTelemetry's
// conventions with their units, and a span for each acquire, renew,
// release and handover of a lease. It is a module of its own
// (github.com/tenure-go/tenure/otel), so that Tenure itself does not
// depend on OpenTelemetry.
//
//	tel, err := tenureotel.New(
//		tenureotel.WithMeterProvider(mp),  // default otel.GetMeterProvider()
//		tenureotel.WithTracerProvider(tp), // default otel.GetTracerProvider()
//	)
//	e, err := lead.New("nightly", st, tel.Options()...)
//
// Given to lead.NewGroup, the options instrument every elector of the
// Group. The metrics, each with the attribute tenure.election.name:
//
//	tenure.leader                  gauge {leader}: 1 while this process leads, else 0
//	tenure.term.token              gauge {token}: fencing token of the current or last term
//	tenure.leadership.changes      counter {change}, attribute tenure.change=started|stopped
//	tenure.renewal.duration        histogram s: round trips of renewals
//	tenure.renewal.failures        counter {failure}: renewals that failed (not conflicts)
//	tenure.last_renewal.timestamp  gauge s: Unix time the last successful acquire or renewal returned
//	tenure.store.errors            counter {error}, attribute tenure.store.operation=read|acquire|renew|release
//	tenure.every.errors            counter {error}: runs of Elector.Every that failed while their term went on
//	tenure.claim.waiting           gauge {claim}: 1 while this process waits on a claim it created
//	tenure.watch.up                gauge {watch}: 1 while the watch of the record is up
//	tenure.lease.duration          gauge s: the lease the last successful acquire or renewal promised
//
// Named as OpenTelemetry's Prometheus exporter translates them (dots to
// underscores, _seconds for the unit s, _total on counters; units in
// braces dropped), they are the names of package metrics, so its alert
// rules and dashboard apply, but for the election's label, which is
// tenure_election_name instead of name.
//
// The spans, named tenure.acquire, tenure.renew, tenure.release and
// tenure.handover, of kind client, run from when the operation began to
// when the store answered, with the attributes tenure.election.name,
// tenure.token (the fencing token the operation wrote) and tenure.outcome
// (ok, conflict or error: see lead.Operation). An operation that failed
// without an answer has the status Error and its error recorded; a
// conflict is an answer, not an error.
package tenureotel
