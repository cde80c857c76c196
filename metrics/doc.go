// Package metrics exports an Elector's state and store operations as
// Prometheus metrics.
//
//	m := metrics.New()
//	prometheus.MustRegister(m)
//	e, err := lead.New("nightly", st, m.Options()...)
//
// The metrics, each labelled with the election name:
//
//	tenure_leader                          gauge: 1 while this process leads, else 0
//	tenure_term_token                      gauge: fencing token of the current or last term
//	tenure_leadership_changes_total        counter, label change="started"|"stopped"
//	tenure_renewal_duration_seconds        histogram of renewal round trips
//	tenure_renewal_failures_total          counter of renewals that failed (not conflicts)
//	tenure_last_renewal_timestamp_seconds  gauge: when the last successful acquire or renewal returned
//	tenure_store_errors_total              counter of failed store operations, label op=read|acquire|renew|release
//	tenure_every_errors_total              counter of runs of Elector.Every that failed while their term went on
//	tenure_claim_waiting                   gauge: 1 while this process waits on a claim it created, else 0
//	tenure_watch_up                        gauge: 1 while the watch of the record is up, 0 while polling after it failed
//	tenure_lease_duration_seconds          gauge: the lease the last successful acquire or renewal promised
//
// And, labelled with the operation (op="renew") rather than a name, for a
// lead.Group on a store that batches (store.Batcher):
//
//	tenure_store_batches_total             counter of requests that carried a batch of operations
//	tenure_store_batched_operations_total  counter of the operations those requests carried
package metrics
