package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tenure-go/tenure/internal/testing/testcluster"
	"github.com/tenure-go/tenure/internal/ui"
	"github.com/tenure-go/tenure/lease"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/storeurl"
	"github.com/tenure-go/tenure/tools/browser"
)

// showWithin is the time the page has to show a new holder, from the
// moment the new leader's elector reports that it leads. The page learns
// it from its server's watch of the record (Redis Pub/Sub), so it takes
// milliseconds when the machine is not loaded; the bound leaves room for
// a loaded machine, and is still shorter than the listing interval
// (listEvery), which a page without working watches would wait for.
const showWithin = 5 * time.Second

// listEvery is the page server's listing interval in the test.
const listEvery = 8 * time.Second

// hostileHolder and hostileName are text a writer of the store can put
// in a record: the page must show it as text.
const (
	hostileName   = `ui/<script>window.pwned=1</script>`
	hostileHolder = `<img src=x onerror="window.pwned=2">`
)

// TestUIPageShowsAHandoverInChromium runs three electors of one election
// on a real Redis, serves the page of tenure ui for it, loads the page in
// headless Chromium, stops the leader, and checks on the rendered page
// that the new holder appears in the table within showWithin of its
// elector leading, and that the name's timeline shows the handover, from
// the old holder to the new one with a larger token. It keeps
// ui-before.png and ui-after.png as artifacts. A record whose name and
// holder are markup is shown as text, and its markup never runs.
func TestUIPageShowsAHandoverInChromium(t *testing.T) {
	bctx := browser.New(t)
	r := testcluster.NewRedis(t)
	storeURL := "unix://" + r.Addr()
	open := func(tb testing.TB) storeurl.Store[json.RawMessage] {
		tb.Helper()
		st, err := storeurl.Open[json.RawMessage](context.Background(), nil, storeURL)
		if err != nil {
			tb.Fatalf("open %s: %v", storeURL, err)
		}
		tb.Cleanup(func() { _ = st.Close() })
		return st
	}

	const election = "ui/reports"
	electors := testcluster.NewElectors(t, election, 10*time.Second, func(tb testing.TB) store.Store[json.RawMessage] { return open(tb) })
	cfg := testcluster.FastConfig()
	electors.StartEach([]string{"node-1", "node-2", "node-3"}, cfg)
	first := electors.NextLeader()

	// A record written by someone who puts markup in it.
	st := open(t)
	if _, _, err := st.CompareAndSwap(t.Context(), hostileName, 0, lease.Record[json.RawMessage]{
		Holder: hostileHolder, Token: 1, LeaseDuration: time.Hour, Metadata: json.RawMessage(`{"note":"</td><b>x</b>"}`),
	}); err != nil {
		t.Fatal(err)
	}

	// The page's server, as tenure ui runs it, on a store of its own.
	uiCfg := ui.Config{Prefix: "ui/", Interval: listEvery}
	if store.ListerOf[json.RawMessage](st) == nil {
		uiCfg = ui.Config{Names: []string{election, hostileName}, Interval: listEvery}
	}
	srv, err := ui.New[json.RawMessage](open(t), uiCfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ui.Serve(sctx, ln, srv) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("ui.Serve = %v", err)
		}
	})

	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+ln.Addr().String()+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, bctx, "the first leader "+first.ID+" in the table", showWithin, holderIs(election, first.ID))
	waitFor(t, bctx, "the hostile record shown as text", showWithin, holderIs(hostileName, hostileHolder))
	browser.Screenshot(bctx, t, "ui-before")

	next, took := electors.Handover(first.ID)
	if next.ID == first.ID || next.Term.Token <= first.Term.Token {
		t.Fatalf("handover from %s (token %d) to %s (token %d)", first.ID, first.Term.Token, next.ID, next.Term.Token)
	}
	t.Logf("%s stopped; %s leads with token %d, %v after the stop", first.ID, next.ID, next.Term.Token, took)
	shown := time.Now()
	waitFor(t, bctx, "the new leader "+next.ID+" in the table", showWithin, holderIs(election, next.ID))
	t.Logf("the page showed %s %v after its elector reported leading", next.ID, time.Since(next.At).Round(time.Millisecond))
	// The timeline's newest entry is the new term; the old holder's term
	// is below it.
	waitFor(t, bctx, "the handover in the timeline", showWithin-time.Since(shown), fmt.Sprintf(`(() => {
		const lane = [...document.querySelectorAll("#timeline .lane")].find(l => l.dataset.name === %q);
		if (!lane) return false;
		const items = [...lane.querySelectorAll("li.handover")].map(li => [li.dataset.holder, Number(li.dataset.token)]);
		const old = items.findIndex(([h, tok]) => h === %q && tok === %d);
		return items.length >= 2 && items[0][0] === %q && items[0][1] === %d && old > 0;
	})()`, election, first.ID, first.Term.Token, next.ID, next.Term.Token))
	browser.Screenshot(bctx, t, "ui-after")

	// Markup from the store was shown and never ran.
	pwned, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.pwned !== undefined || document.querySelector("#rows img, #rows script, #rows b, #timeline img") !== null`))
	if err != nil {
		t.Fatal(err)
	}
	if pwned {
		t.Fatal("markup from a record became part of the page")
	}
}

// holderIs is a predicate that the table's row of name shows holder.
func holderIs(name, holder string) string {
	return fmt.Sprintf(`(() => {
		const tr = [...document.querySelectorAll("#rows tr")].find(tr => tr.dataset.name === %q);
		return !!tr && tr.querySelector("td.holder").firstChild.textContent === %q;
	})()`, name, holder)
}

// waitFor polls the page until the JavaScript predicate is true, for at
// most within; it fails the test with what the table shows otherwise.
func waitFor(t *testing.T, bctx context.Context, what string, within time.Duration, predicate string) {
	t.Helper()
	_, err := chromedp.Run(bctx, chromedp.Poll[bool](predicate, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(within)))
	if err == nil {
		return
	}
	table, terr := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
	if terr != nil {
		table = terr.Error()
	}
	browser.Screenshot(bctx, t, "ui-failed")
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the page did not show %s within %v; it shows:\n%s", what, within, table)
	}
	t.Fatalf("waiting for %s: %v; the page shows:\n%s", what, err, table)
}
