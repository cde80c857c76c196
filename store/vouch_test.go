package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tenure-go/tenure/store"
)

// A CreateVouch is vouched only by VouchCreate on a context that carries
// it, and nil arguments never panic.
func TestCreateVouch(t *testing.T) {
	var nilVouch *store.CreateVouch
	if nilVouch.Vouched() {
		t.Error("a nil CreateVouch is vouched")
	}
	//lint:ignore SA1012 a nil ctx must not panic
	store.VouchCreate(nil)
	store.VouchCreate(context.Background())
	//lint:ignore SA1012 a nil ctx must not panic
	if ctx := store.WithCreateVouch(nil, nil); ctx == nil {
		t.Error("WithCreateVouch(nil, nil) returned a nil context")
	}
	v, other := new(store.CreateVouch), new(store.CreateVouch)
	ctx := store.WithCreateVouch(context.Background(), v)
	if v.Vouched() {
		t.Error("vouched before VouchCreate")
	}
	store.VouchCreate(ctx)
	if !v.Vouched() || other.Vouched() {
		t.Errorf("after VouchCreate: %v, another %v; want true, false", v.Vouched(), other.Vouched())
	}
}

// A driver attaches a CreateVouch to the context of a create; a store that
// can tell that it lost no record lately vouches for it.
func ExampleCreateVouch() {
	vouchingCreate := func(ctx context.Context) {
		// ... the store created the record and knows it lost none ...
		store.VouchCreate(ctx)
	}
	v := new(store.CreateVouch)
	vouchingCreate(store.WithCreateVouch(context.Background(), v))
	fmt.Println("lead at once:", v.Vouched())
	// Output: lead at once: true
}
