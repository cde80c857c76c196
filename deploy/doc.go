// Package deploy holds no code: its tests check the files of this
// directory, the Prometheus alert rules (prometheus/tenure-alerts.yaml)
// and the Grafana dashboard (grafana/tenure.json), against the metrics
// package metrics exports. It is a module of its own so that Tenure does
// not depend on Prometheus's PromQL parser.
package deploy
