package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tendhq/tend/store"
)

func TestValidateNames(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		what     string
		validate func(string) error
		good     []string
		bad      []string
	}{
		{"kind", store.ValidateKind,
			[]string{"A", "ApiGateway", "W2", "A" + long(62)},
			[]string{"", "apiGateway", "2A", "Api-Gateway", "Api Gateway", "A" + long(63), "Ä"}},
		{"key", store.ValidateKey,
			[]string{"a", "team-a/gw-1", "A.b_c:d~e", "x/y/z", "..a", long(253), "a./b"},
			[]string{"", long(254), "a b", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "é", "a\x00", "a\tb", "a?b", "a%2F"}},
		{"finalizer", store.ValidateFinalizer,
			[]string{"example.com/cleanup", "tend.dev/x", "a.b.c/Clean_up.1", "x.y/" + long(63)},
			[]string{"", "cleanup", "example/cleanup", "Example.com/x", "example.com/", "/x", "example.com/-x",
				"example.com/x-", "example..com/x", "-example.com/x", "example.com/a/b", "example.com/" + long(64),
				"example.com/a b"}},
		{"label key", store.ValidateLabelKey,
			[]string{"app", "example.com/tier", "a.b-c_d", "x/" + long(63), long(63)},
			[]string{"", "-a", "a-", "a b", "/a", "a/", "Example.com/a", "a/b/c", long(64), "é"}},
		{"label value", store.ValidateLabelValue,
			[]string{"", "v", "v1.2-x_y", long(63)},
			[]string{"-v", "v-", "a b", "a/b", long(64)}},
	}
	for _, tt := range tests {
		for _, s := range tt.good {
			if err := tt.validate(s); err != nil {
				t.Errorf("%s %q: unexpected error %v", tt.what, s, err)
			}
		}
		for _, s := range tt.bad {
			err := tt.validate(s)
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s %q: got %v, want ErrInvalid", tt.what, s, err)
				continue
			}
			if !strings.Contains(err.Error(), tt.what) {
				t.Errorf("%s %q: error %q does not say what is wrong", tt.what, s, err)
			}
		}
	}
}

func TestErrorFormat(t *testing.T) {
	err := &store.Error{Op: "update status", Kind: "ApiGateway", Key: "team-a/gw-1", Err: store.ErrConflict}
	if got, want := err.Error(), `store: update status ApiGateway "team-a/gw-1": store: conflict`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, store.ErrConflict) {
		t.Error("does not match its cause")
	}
	if got := store.EventType(9).String(); got != "EventType(9)" {
		t.Errorf("String() = %q", got)
	}
}
