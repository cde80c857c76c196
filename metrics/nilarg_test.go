package metrics_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/metrics"
	"github.com/tenure-go/tenure/store/memstore"
)

// A nil or zero Collectors records nothing and panics nowhere; lead.New
// refuses the options of a nil one, naming WithInstruments. Nil options and
// a nil clock keep the defaults.
func TestNilArguments(t *testing.T) {
	var nilC *metrics.Collectors
	for _, c := range []*metrics.Collectors{nilC, {}, metrics.New(nil, metrics.WithClock(nil))} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%p: panic: %v", c, p)
				}
			}()
			c.Observe(lead.Change{Kind: lead.Started, Term: lead.Term{Name: "job", Token: 1}})
			c.StoreOp("job", lead.OpRenew, time.Millisecond, nil)
			c.StoreOp("job", lead.OpRenew, time.Millisecond, errors.New("down"))
			c.Claim("job", 1, true)
			c.Watch("job", false)
			c.LeaseOp(lead.Operation{Name: "job", Op: lead.OpRenew})
			c.HandOver(lead.Operation{Name: "job", Op: lead.OpHandOver})
			c.Describe(nil)
			c.Collect(nil)
			descs := make(chan *prometheus.Desc, 100)
			c.Describe(descs)
			metricsCh := make(chan prometheus.Metric, 100)
			c.Collect(metricsCh)
		}()
	}
	_, err := lead.New("job", memstore.New[struct{}](), append(nilC.Options(), lead.WithLookupEnv(nil))...)
	if !errors.Is(err, lead.ErrNilArgument) || !strings.Contains(err.Error(), "WithInstruments") {
		t.Errorf("lead.New with a nil Collectors' options = %v; want ErrNilArgument naming WithInstruments", err)
	}
}
