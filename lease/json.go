package lease

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// configJSON is the JSON form of a Config: durations in Go syntax ("15s"),
// keys named as the environment variables of Load, in lower case. A nil
// field was absent from the input.
type configJSON struct {
	LeaseDuration  *string  `json:"lease_duration,omitempty"`
	RenewDeadline  *string  `json:"renew_deadline,omitempty"`
	RetryInterval  *string  `json:"retry_interval,omitempty"`
	RetryJitter    *float64 `json:"retry_jitter,omitempty"`
	BackendTimeout *string  `json:"backend_timeout,omitempty"`
	ErrorInterval  *string  `json:"error_interval,omitempty"`
}

// configKeys are the keys of configJSON, which UnmarshalJSON matches
// exactly: encoding/json alone would match them regardless of case.
var configKeys = []string{"lease_duration", "renew_deadline", "retry_interval", "retry_jitter", "backend_timeout", "error_interval"}

// checkKeys refuses a JSON object with a key that is not exactly one of
// configKeys ("Lease_Duration", "LEASE_DURATION" included), naming it.
// Input that is not an object is left to the decoding that follows.
func checkKeys(data []byte, where string) error {
	var obj map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(data)).Decode(&obj) != nil {
		return nil
	}
	var unknown []string
	for k := range obj {
		if !slices.Contains(configKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	errs := make([]error, len(unknown))
	for i, k := range unknown {
		errs[i] = fmt.Errorf("%w: unknown field %q%s (keys are exact, in lower case: %s)", ErrInvalidConfig, k, where, strings.Join(configKeys, ", "))
	}
	return errors.Join(errs...)
}

// MarshalJSON writes c as a JSON object with every duration a string in Go
// syntax:
//
//	{"lease_duration":"15s","renew_deadline":"10s","retry_interval":"2s",
//	 "retry_jitter":0.1,"backend_timeout":"5s","error_interval":"30s"}
//
// It writes any Config, valid or not, except one whose RetryJitter is NaN
// or infinite, which JSON cannot hold.
func (c Config) MarshalJSON() ([]byte, error) {
	if math.IsNaN(c.RetryJitter) || math.IsInf(c.RetryJitter, 0) {
		return nil, fmt.Errorf("%w: RetryJitter is %v, which JSON cannot hold", ErrInvalidConfig, c.RetryJitter)
	}
	str := func(d time.Duration) *string { s := d.String(); return &s }
	j := c.RetryJitter
	return json.Marshal(configJSON{
		LeaseDuration:  str(c.LeaseDuration),
		RenewDeadline:  str(c.RenewDeadline),
		RetryInterval:  str(c.RetryInterval),
		RetryJitter:    &j,
		BackendTimeout: str(c.BackendTimeout),
		ErrorInterval:  str(c.ErrorInterval),
	})
}

// UnmarshalJSON reads the object MarshalJSON writes into c. A key that is
// absent (or null) leaves its field as it was, so decoding into
// DefaultConfig() changes only what the input sets. Durations are strings
// in Go syntax ("15s", "1500ms"); a bare number is refused, since it would
// be read as nanoseconds. An unknown key, a second JSON value after the
// object, a duration that cannot be parsed, and a result that
// Config.Validate refuses are errors wrapping ErrInvalidConfig that name the
// key, the value and the rule; on error c is left unchanged. Keys match exactly:
// "Lease_Duration" is an unknown key, not lease_duration.
//
// YAML follows from it with a library that converts YAML to JSON before
// decoding, such as sigs.k8s.io/yaml (see the package example); this
// package imports none.
func (c *Config) UnmarshalJSON(data []byte) error {
	if c == nil {
		return fmt.Errorf("%w: UnmarshalJSON into a nil *Config", ErrInvalidConfig)
	}
	return c.decodeJSON(data, "")
}

// ReadFile reads the JSON file at path (the object Config.MarshalJSON
// writes) over base and returns the result: a key absent from the file
// leaves base's value. Its errors are UnmarshalJSON's, each naming the
// file as well as the key, the value and the rule, such as "lease: invalid
// config: LeaseDuration is -5s (from key lease_duration in
// /etc/app/tenure.json), must be at least 1ms (lease.MinDuration)"; a file
// that cannot be read is an error naming it.
func ReadFile(path string, base Config) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("lease: reading the config file: %w", err)
	}
	c := base
	if err := c.decodeJSON(data, " in "+path); err != nil {
		return base, err
	}
	return c, nil
}

// typeErrValue is what te says the JSON value of its key was, with the
// value itself ("number 90", "string \"0.25\"") read back from data, so
// that an error loses nothing of what was given; compacted, and cut
// after maxShownValue bytes.
func typeErrValue(data []byte, te *json.UnmarshalTypeError) string {
	if strings.Contains(te.Value, " ") {
		return te.Value // encoding/json gave the value already ("number 1e400")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return te.Value
	}
	raw, ok := obj[te.Field]
	if !ok {
		return te.Value
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return te.Value
	}
	v := b.String()
	if jsonKind(v) != te.Value {
		// A key given twice: the value kept is not the one refused.
		return te.Value
	}
	if len(v) > maxShownValue {
		v = fmt.Sprintf("%s... (%d bytes)", v[:maxShownValue], len(v))
	}
	return te.Value + " " + v
}

// jsonKind names the kind of the compacted JSON value v as
// json.UnmarshalTypeError.Value does.
func jsonKind(v string) string {
	switch {
	case v == "":
		return ""
	case v[0] == '"':
		return "string"
	case v[0] == '{':
		return "object"
	case v[0] == '[':
		return "array"
	case v == "true" || v == "false":
		return "bool"
	case v == "null":
		return "null"
	}
	return "number"
}

// maxShownValue is the most bytes of a refused JSON value an error shows.
const maxShownValue = 200

// decodeJSON is UnmarshalJSON, with where (" in FILE", or "") after every
// key its errors name.
func (c *Config) decodeJSON(data []byte, where string) error {
	if err := checkKeys(data, where); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in configJSON
	if err := dec.Decode(&in); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			want := "a string duration such as \"15s\""
			if te.Field == "retry_jitter" {
				want = "a number in [0, 1), such as 0.1"
			}
			return fmt.Errorf("%w: %s%s is a JSON %s, must be %s", ErrInvalidConfig, te.Field, where, typeErrValue(data, te), want)
		}
		return fmt.Errorf("%w%s: %w", ErrInvalidConfig, where, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON object%s", ErrInvalidConfig, where)
	}
	next := *c
	var (
		errs    []error
		sources Sources
	)
	durations := []struct {
		key, field string
		in         *string
		dst        *time.Duration
	}{
		{"lease_duration", "LeaseDuration", in.LeaseDuration, &next.LeaseDuration},
		{"renew_deadline", "RenewDeadline", in.RenewDeadline, &next.RenewDeadline},
		{"retry_interval", "RetryInterval", in.RetryInterval, &next.RetryInterval},
		{"backend_timeout", "BackendTimeout", in.BackendTimeout, &next.BackendTimeout},
		{"error_interval", "ErrorInterval", in.ErrorInterval, &next.ErrorInterval},
	}
	for _, d := range durations {
		if d.in == nil {
			continue
		}
		v, err := time.ParseDuration(*d.in)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s%s is %q, not a duration (use Go syntax such as 15s or 1500ms)", ErrInvalidConfig, d.key, where, *d.in))
			continue
		}
		*d.dst = v
		*sources.field(d.field) = "key " + d.key + where
	}
	if in.RetryJitter != nil {
		next.RetryJitter = *in.RetryJitter
		sources.RetryJitter = "key retry_jitter" + where
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := next.validate(sources); err != nil {
		return err
	}
	*c = next
	return nil
}
