package lease_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenure-go/tenure/lease"
)

// Nil and zero arguments: a nil lookup reads nothing, the zero Config is
// refused by Validate with every field named, and nothing panics.
func TestNilAndZeroArguments(t *testing.T) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic: %v", p)
		}
	}()
	if s, err := lease.Load("", lease.Config{}, nil); err != nil || s != (lease.Settings{}) {
		t.Errorf("Load with a nil lookup = %+v, %v", s, err)
	}
	if id := lease.LoadIdentity("", nil); id != "" {
		t.Errorf("LoadIdentity with a nil lookup = %q", id)
	}
	if p := lease.EnvPrefix(""); p != "TENURE__" {
		t.Errorf("EnvPrefix(\"\") = %q", p)
	}
	err := lease.Config{}.Validate()
	if !errors.Is(err, lease.ErrInvalidConfig) {
		t.Fatalf("zero Config: Validate = %v", err)
	}
	for _, f := range []string{"LeaseDuration", "RenewDeadline", "RetryInterval", "BackendTimeout", "ErrorInterval"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("Validate of the zero Config does not name %s: %v", f, err)
		}
	}
	if (lease.Config{}).MaxRetryInterval() != 0 || (lease.Record[struct{}]{}).Held() {
		t.Error("zero Config or Record answers oddly")
	}
}
