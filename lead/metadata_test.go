package lead_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-go/tenure/lead"
	"github.com/tenure-go/tenure/store"
	"github.com/tenure-go/tenure/store/memstore"
)

// picky is metadata whose JSON encoding fails when Bad is set.
type picky struct {
	Addr string
	Bad  bool
}

func (p picky) MarshalJSON() ([]byte, error) {
	if p.Bad {
		return nil, errors.New("picky: bad")
	}
	type plain picky
	return json.Marshal(plain(p))
}

// SetMetadata refuses what the store cannot take and keeps the metadata in
// force; the elector keeps leading, renewing with the metadata it had.
func TestSetMetadataRefusesWhatTheStoreCannotTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New[picky]()
		e, err := lead.New("job", st, lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetMetadata(picky{Addr: "10.0.0.1:80"}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx) }()
		synctest.Wait()
		tests := []struct {
			name string
			m    picky
			want error
		}{
			{"unencodable", picky{Addr: "x", Bad: true}, store.ErrEncode},
			{"too large", picky{Addr: strings.Repeat("x", store.MaxMetadataBytes)}, store.ErrMetadataTooLarge},
		}
		for _, tt := range tests {
			if err := e.SetMetadata(tt.m); !errors.Is(err, tt.want) {
				t.Errorf("%s: SetMetadata = %v, want %v", tt.name, err, tt.want)
			}
		}
		time.Sleep(2 * time.Second) // several renewals
		synctest.Wait()
		select {
		case err := <-ran:
			t.Fatalf("Run returned %v after refused metadata", err)
		default:
		}
		if !e.IsLeader() {
			t.Fatal("no longer leads after refused metadata")
		}
		rec, _ := e.Record()
		if rec.Metadata.Addr != "10.0.0.1:80" || rec.RenewedAt.Equal(rec.AcquiredAt) {
			t.Fatalf("record after refused metadata: %+v; want renewals with the metadata in force", rec)
		}
		if err := e.SetMetadata(picky{Addr: "10.0.0.2:80"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if rec, _ := e.Record(); rec.Metadata.Addr != "10.0.0.2:80" {
			t.Fatalf("metadata after a good SetMetadata: %+v", rec.Metadata)
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

// A store that does not implement store.MetadataChecker (a plain wrapper)
// is checked with JSON and MaxMetadataBytes; one that forwards it with
// store.CheckMetadata is checked with its own codec.
func TestSetMetadataChecksWithTheCodecAWrapperForwards(t *testing.T) {
	type wrapped struct{ store.Store[meta] }
	tooLarge := meta{Addr: strings.Repeat("x", store.MaxMetadataBytes)}
	for _, st := range []store.Store[meta]{wrapped{memstore.New[meta]()}, checkingWrapper{memstore.New[meta]()}} {
		e, err := lead.New("job", st, lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetMetadata(tooLarge); !errors.Is(err, store.ErrMetadataTooLarge) {
			t.Errorf("%T: SetMetadata = %v, want ErrMetadataTooLarge", st, err)
		}
	}
	// A codec with a smaller limit than JSON's: only the forwarding wrapper
	// knows.
	small := memstore.NewWithCodec[meta](shortCodec{})
	e, _ := lead.New("job", checkingWrapper{small}, lead.WithLookupEnv(nil))
	if err := e.SetMetadata(meta{Addr: "far too long"}); !errors.Is(err, store.ErrEncode) {
		t.Errorf("SetMetadata through a forwarding wrapper = %v, want the codec's ErrEncode", err)
	}
}

// checkingWrapper forwards store.MetadataChecker.
type checkingWrapper struct{ store.Store[meta] }

func (w checkingWrapper) CheckMetadata(m meta) error { return store.CheckMetadata(w.Store, m) }

// shortCodec is JSON that refuses addresses longer than 8 bytes.
type shortCodec struct{ store.JSONCodec[meta] }

func (c shortCodec) Encode(m meta) ([]byte, error) {
	if len(m.Addr) > 8 {
		return nil, store.ErrEncode
	}
	return c.JSONCodec.Encode(m)
}

// Lead and Every called before Run wait for Run and lead once it does; once
// Run has returned they return ErrStopped, whether they were waiting or
// called afterwards.
func TestLeadAndEveryWaitForRunAndStopWhenItReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := lead.New("job", memstore.New[meta](), lead.WithIdentity("a"), lead.WithConfig(fastConfig()), lead.WithLookupEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		led := make(chan error, 1)
		go func() {
			led <- e.Lead(context.Background(), func(context.Context, lead.Term) error { return nil })
		}()
		ticked := make(chan lead.Term, 100)
		every := make(chan error, 1)
		go func() {
			every <- e.Every(context.Background(), time.Second, func(_ context.Context, t lead.Term) error {
				ticked <- t
				return nil
			})
		}()
		time.Sleep(time.Minute) // no Run yet: both wait
		synctest.Wait()
		select {
		case err := <-led:
			t.Fatalf("Lead before Run returned %v; want it to wait for Run", err)
		case err := <-every:
			t.Fatalf("Every before Run returned %v; want it to wait for Run", err)
		case term := <-ticked:
			t.Fatalf("Every ran its body before Run, in term %+v", term)
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- e.Run(ctx) }()
		if err := <-led; err != nil {
			t.Fatalf("Lead started before Run = %v, want its body's nil", err)
		}
		if term := <-ticked; term.Token != 1 {
			t.Fatalf("Every ran in term %+v", term)
		}
		// A Lead waiting for a term when Run returns gets ErrStopped.
		go func() {
			led <- e.Lead(context.Background(), func(context.Context, lead.Term) error { return nil }, lead.Repeat())
		}()
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if err := <-led; !errors.Is(err, lead.ErrStopped) {
			t.Fatalf("Lead waiting when Run returned = %v, want ErrStopped", err)
		}
		if err := <-every; !errors.Is(err, lead.ErrStopped) {
			t.Fatalf("Every when Run returned = %v, want ErrStopped", err)
		}
		// Called after Run returned: ErrStopped at once.
		if err := e.Lead(context.Background(), func(context.Context, lead.Term) error { return nil }); !errors.Is(err, lead.ErrStopped) {
			t.Fatalf("Lead after Run = %v, want ErrStopped", err)
		}
		if err := e.Every(context.Background(), time.Second, func(context.Context, lead.Term) error { return nil }); !errors.Is(err, lead.ErrStopped) {
			t.Fatalf("Every after Run = %v, want ErrStopped", err)
		}
	})
}
