package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tendhq/tend/store"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in    string
		canon string
	}{
		{"", ""},
		{"   ", ""},
		{"a=b", "a=b"},
		{"a==b", "a=b"},
		{" a = b ", "a=b"},
		{"a!=b", "a!=b"},
		{"a=", "a="},
		{"a", "a"},
		{"!a", "!a"},
		{"! a", "!a"},
		{"a in (x,y)", "a in (x,y)"},
		{"a in(y, x ,x)", "a in (x,y)"},
		{"a notin (y,x)", "a notin (x,y)"},
		{"a in (x)", "a=x"},
		{"a notin (x)", "a!=x"},
		{"b=1,a=2", "a=2,b=1"},
		{"a=1,a=1", "a=1"},
		{"a notin (x),a,!b,a=1", "a,a=1,a!=x,!b"},
		{"example.com/tier=web,app", "app,example.com/tier=web"},
		{"in in (in,notin)", "in in (in,notin)"},
		{"notin=in", "notin=in"},
		{"a=b.c-d_e", "a=b.c-d_e"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, err := store.ParseSelector(tt.in)
			if err != nil {
				t.Fatalf("ParseSelector(%q): %v", tt.in, err)
			}
			if got := s.String(); got != tt.canon {
				t.Errorf("String() = %q, want %q", got, tt.canon)
			}
			if s.Empty() != (tt.canon == "") {
				t.Errorf("Empty() = %v", s.Empty())
			}
			again, err := store.ParseSelector(s.String())
			if err != nil || !reflect.DeepEqual(again.Requirements(), s.Requirements()) {
				t.Errorf("re-parse of %q: %v, %v", s.String(), again.Requirements(), err)
			}
		})
	}
}

func TestParseSelectorErrors(t *testing.T) {
	for _, in := range []string{
		",", "a,", ",a", "a=b,,c", "a b", "a=b c", "a===b", "a=!b", "!a=b", "!", "!!a", "a in", "a in ()",
		"a in (x,)", "a in (,x)", "a in (x", "a in x", "a notin (x y)", "=b", "!=b", "a=-b", "a=b-",
		"-a=b", "a/b/c=d", "Example.com/a=b", strings.Repeat("a", 64) + "=b", "a=" + strings.Repeat("b", 64),
		"a=b;c", "a\tin\t(x),=", "a=é",
	} {
		t.Run(in, func(t *testing.T) {
			_, err := store.ParseSelector(in)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("ParseSelector(%q) = %v, want ErrInvalid", in, err)
			}
			if !strings.Contains(err.Error(), "selector") {
				t.Errorf("error %q does not say it is about a selector", err)
			}
		})
	}
}

func TestSelectorMatches(t *testing.T) {
	labels := map[string]string{"env": "prod", "tier": "web", "empty": ""}
	tests := []struct {
		sel  string
		want bool
	}{
		{"", true},
		{"env=prod", true},
		{"env=dev", false},
		{"env!=dev", true},
		{"env!=prod", false},
		{"missing!=x", true},
		{"env in (dev,prod)", true},
		{"env in (dev,qa)", false},
		{"missing in (a,b)", false},
		{"env notin (dev,qa)", true},
		{"env notin (prod,qa)", false},
		{"missing notin (a,b)", true},
		{"env", true},
		{"missing", false},
		{"!missing", true},
		{"!env", false},
		{"empty=", true},
		{"empty", true},
		{"missing=", false},
		{"env=prod,tier=web", true},
		{"env=prod,tier=db", false},
		{"env=prod,env=dev", false},
	}
	for _, tt := range tests {
		s := store.MustParseSelector(tt.sel)
		if got := s.Matches(labels); got != tt.want {
			t.Errorf("%q.Matches(%v) = %v, want %v", tt.sel, labels, got, tt.want)
		}
	}
	if !(store.Selector{}).Matches(nil) {
		t.Error("the zero Selector does not match a document without labels")
	}
}

func TestSelectorFromMap(t *testing.T) {
	s := store.SelectorFromMap(map[string]string{"tier": "web", "env": "prod"})
	if got, want := s.String(), "env=prod,tier=web"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	if !s.Matches(map[string]string{"env": "prod", "tier": "web", "x": "y"}) || s.Matches(map[string]string{"env": "prod"}) {
		t.Error("wrong matches")
	}
	if !store.SelectorFromMap(nil).Empty() {
		t.Error("selector from an empty map is not empty")
	}
	bad := store.SelectorFromMap(map[string]string{"bad key": "v"})
	if err := bad.Validate(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "bad key") {
		t.Errorf("Validate() of an invalid selector = %v, want ErrInvalid naming the key", err)
	}
	if bad.Empty() || bad.Matches(map[string]string{"bad key": "v"}) {
		t.Error("an invalid selector is empty or matches")
	}
}

func TestSelectorRequirementsAreCopies(t *testing.T) {
	s := store.MustParseSelector("a in (x,y)")
	r := s.Requirements()
	r[0].Values[0] = "z"
	r[0].Key = "b"
	if got := s.String(); got != "a in (x,y)" {
		t.Errorf("changing Requirements() changed the selector to %q", got)
	}
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{
		"", "a=b", "a==b,c!=d", "a in (x,y),!b", "k notin (a, b) , c", "example.com/x=y", "a=", "!a,a",
		"in in (in)", "a in (x", "a=b,,", " ! a ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := store.ParseSelector(in)
		if err != nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("ParseSelector(%q) error %v does not match ErrInvalid", in, err)
			}
			return
		}
		out := s.String()
		again, err := store.ParseSelector(out)
		if err != nil {
			t.Fatalf("ParseSelector(%q).String() = %q does not parse: %v", in, out, err)
		}
		if !reflect.DeepEqual(again.Requirements(), s.Requirements()) {
			t.Fatalf("%q -> %q -> %v, want %v", in, out, again.Requirements(), s.Requirements())
		}
		if again.String() != out {
			t.Fatalf("String() is not stable: %q then %q", out, again.String())
		}
		// The canonical form selects the same label sets.
		for _, labels := range []map[string]string{nil, {"a": "b"}, {"a": "", "b": "x"}, {"in": "in"}} {
			if s.Matches(labels) != again.Matches(labels) {
				t.Fatalf("%q and %q disagree on %v", in, out, labels)
			}
		}
	})
}
