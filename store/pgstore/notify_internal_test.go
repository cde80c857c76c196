package pgstore

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// TestParseNotification reads the payloads of the Store's channel, and
// whatever else anyone may NOTIFY on it.
func TestParseNotification(t *testing.T) {
	tests := []struct {
		name, payload string
		ok            bool
		wantName      string
		wantRev       int64
		record        bool // the record came with it
	}{
		{"revision and name", "42:job", true, "job", 42, false},
		{"a name with colons", "42:a:b:c", true, "a:b:c", 42, false},
		{"the whole record", "r1:42:7:3:3000000000:1700000000000000:1700000001000000:6869:4:nodejob", true, "job", 42, true},
		{"a holder with colons", "r1:42:7:3:3000000000:1:2::3:a:bjob:x", true, "job:x", 42, true},
		{"a released record", "r1:42:7:3:3000000000:1:2::0:job", true, "job", 42, true},
		{"a stamped record", "r1:42:7:3:3000000000:1:2:6869.18446744073709551615:4:nodejob", true, "job", 42, true},
		{"a stamp without metadata", "r1:42:7:3:3000000000:1:2:.5:4:nodejob", true, "job", 42, true},
		{"a named release", "r1:42:7:3:3000000000:1:2:~6e6f6465~:0:job", true, "job", 42, true},
		{"a named release with metadata and a stamp", "r1:42:7:3:3000000000:1:2:~6e6f6465~6869.5:0:job", true, "job", 42, true},
		{"a successor not closed: read instead", "r1:42:7:3:3000000000:1:2:~6e6f6465:0:job", true, "job", 42, false},
		{"a successor that is not hex: read instead", "r1:42:7:3:3000000000:1:2:~zz~6869:0:job", true, "job", 42, false},
		{"an empty successor: read instead", "r1:42:7:3:3000000000:1:2:~~6869:0:job", true, "job", 42, false},
		{"metadata that is not hex: read instead", "r1:42:7:3:3000000000:1:2:zz:4:nodejob", true, "job", 42, false},
		{"times that are not numbers: read instead", "r1:42:7:3:3000000000:x:2::4:nodejob", true, "job", 42, false},
		{"holder longer than what follows", "r1:42:7:3:3000000000:1:2::99:nodejob", false, "", 0, false},
		{"negative holder length", "r1:42:7:3:3000000000:1:2::-1:nodejob", false, "", 0, false},
		{"too few fields", "r1:42:7:3", false, "", 0, false},
		{"revision 0", "r1:0:7:3:3000000000:1:2::4:nodejob", false, "", 0, false},
		{"revision not a number", "r1:x:7:3:3000000000:1:2::4:nodejob", false, "", 0, false},
		{"someone else's payload", "hello", false, "", 0, false},
		{"empty", "", false, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, rev, r, ok := parseNotification(tt.payload)
			if ok != tt.ok || name != tt.wantName || rev != tt.wantRev || (r != nil) != tt.record {
				t.Fatalf("parseNotification(%q) = %q, %d, record %v, %v; want %q, %d, record %v, %v",
					tt.payload, name, rev, r != nil, ok, tt.wantName, tt.wantRev, tt.record, tt.ok)
			}
		})
	}
	// The record checks out as a read's would.
	_, _, r, _ := parseNotification("r1:42:7:3:3000000000:1700000000000000:1700000001000000:6869:4:nodejob")
	raw, rev, err := r.parse()
	if err != nil || rev != 42 || raw.Holder != "node" || raw.Token != 7 || raw.Transitions != 3 ||
		raw.LeaseDuration != 3*time.Second || string(raw.Metadata) != "hi" || !raw.RenewedAt.Equal(time.UnixMicro(1700000001000000)) {
		t.Fatalf("record %+v at %d, %v", raw, rev, err)
	}
	// A payload without a stamp (a writer that keeps none) is a record
	// with Stamp 0; one with a stamp carries it; one whose stamp is no
	// number parses and is refused when checked (the watcher reads the
	// row instead).
	for payload, want := range map[string]uint64{
		"r1:42:7:3:3000000000:1:2:6869:4:nodejob":                      0,
		"r1:42:7:3:3000000000:1:2:6869.18446744073709551615:4:nodejob": 1<<64 - 1,
		"r1:42:7:3:3000000000:1:2:.81985529216486895:4:nodejob":        0x0123456789abcdef,
	} {
		_, _, r, _ := parseNotification(payload)
		if raw, _, err := r.parse(); err != nil || raw.Stamp != want || (want == 0) != (r.stamp == nil) {
			t.Errorf("parseNotification(%q): Stamp %d, %v; want %d", payload, raw.Stamp, err, want)
		}
	}
	for _, payload := range []string{"r1:42:7:3:3000000000:1:2:6869.x:4:nodejob", "r1:42:7:3:3000000000:1:2:6869.-1:4:nodejob", "r1:42:7:3:3000000000:1:2:6869.18446744073709551616:4:nodejob"} {
		_, _, r, _ := parseNotification(payload)
		if _, _, err := r.parse(); err == nil {
			t.Errorf("parseNotification(%q): a stamp that is no uint64 was accepted", payload)
		}
	}
	// A named release carries its successor, beside the metadata and the
	// stamp; a record without tildes names none.
	for _, tt := range []struct{ payload, successor, meta string }{
		{"r1:42:7:3:3000000000:1:2:~6e6f6465~6869.5:0:job", "node", "hi"},
		{"r1:42:7:3:3000000000:1:2:~e29883~:0:job", "\u2603", ""},
		{"r1:42:7:3:3000000000:1:2:6869.5:0:job", "", "hi"},
	} {
		_, _, r, _ := parseNotification(tt.payload)
		raw, _, err := r.parse()
		if err != nil || raw.Successor != tt.successor || string(raw.Metadata) != tt.meta {
			t.Errorf("parseNotification(%q): Successor %q, Metadata %q, %v; want %q, %q", tt.payload, raw.Successor, raw.Metadata, err, tt.successor, tt.meta)
		}
	}
	// A listener that knows no successor takes the field for hex (or for
	// hex and a stamp): the tilde makes it drop the record and read the
	// row, as it did for every named release.
	if _, err := hex.DecodeString("~6e6f6465~6869"); err == nil {
		t.Error("a named release's metadata field decodes as hex")
	}
	// A listener that knows no stamp takes the metadata field for hex:
	// the dot makes it drop the record and read the row, never take a
	// wrong one.
	if _, err := hex.DecodeString("6869.18446744073709551615"); err == nil {
		t.Error("a stamped metadata field decodes as hex")
	}
	// A forged record out of bounds parses, and is refused when checked.
	_, _, r, _ = parseNotification("r1:42:" + strings.Repeat("9", 30) + ":3:3000000000:1:2::4:nodejob")
	if _, _, err := r.parse(); err == nil {
		t.Fatal("a token of 30 digits was accepted")
	}
}
