package browser

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

func TestFindHonoursTenureChromium(t *testing.T) {
	if _, err := Find(func(string) string { return "/nonexistent/chromium" }); err == nil {
		t.Fatal("Find accepted a TENURE_CHROMIUM that names nothing")
	}
}

func TestNewRendersAPageAndKeepsAScreenshot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>t</title><body style="background:#fff"><p id="x" style="color:#c00">rendered</p><script>document.getElementById("x").textContent += " by script"</script></body>`))
	}))
	defer srv.Close()
	ctx := New(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text("#x"))
	if err != nil {
		t.Fatal(err)
	}
	if text != "rendered by script" {
		t.Fatalf("page text %q, want %q", text, "rendered by script")
	}
	path := Screenshot(ctx, t, "page")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if w := img.Bounds().Dx(); w != 1280 {
		t.Fatalf("screenshot is %d pixels wide, want 1280", w)
	}
	// The red text must show: some pixel is red.
	red := false
	for y := 0; y < 100 && !red; y++ {
		for x := 0; x < 300 && !red; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			red = r > 0xa000 && g < 0x4000 && b < 0x4000
		}
	}
	if !red {
		t.Fatal("screenshot shows no red text")
	}
}
