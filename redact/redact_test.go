package redact_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/redact"
)

type inner struct {
	Note  string
	Key   []byte            `tend:"sensitive"`
	Extra map[string]string `tend:"other,sensitive"`
}

type outer struct {
	Name    string
	Secret  string `tend:"sensitive"`
	Nested  *inner
	List    []inner
	ByName  map[string]*inner
	Any     any
	Numbers struct {
		Port int
		PIN  uint32 `tend:"sensitive"`
	}
	Next *outer
}

func genText() *rapid.Generator[string] {
	// Short strings over a small alphabet collide with each other and with
	// the marker's letters: the hard cases.
	return rapid.StringOfN(rapid.RuneFrom([]rune("[]redactx-a ")), 0, 12, -1)
}

func genInner() *rapid.Generator[inner] {
	return rapid.Custom(func(t *rapid.T) inner {
		return inner{
			Note:  genText().Draw(t, "note"),
			Key:   []byte(genText().Draw(t, "key")),
			Extra: rapid.MapOfN(genText(), genText(), 0, 2).Draw(t, "extra"),
		}
	})
}

func genOuter() *rapid.Generator[*outer] {
	return rapid.Custom(func(t *rapid.T) *outer {
		o := &outer{
			Name:   genText().Draw(t, "name"),
			Secret: genText().Draw(t, "secret"),
			List:   rapid.SliceOfN(genInner(), 0, 2).Draw(t, "list"),
			ByName: map[string]*inner{},
		}
		if rapid.Bool().Draw(t, "nested") {
			in := genInner().Draw(t, "inner")
			o.Nested = &in
		}
		if rapid.Bool().Draw(t, "any") {
			o.Any = genInner().Draw(t, "anyInner")
		}
		in := genInner().Draw(t, "byName")
		o.ByName[genText().Draw(t, "byNameKey")] = &in
		o.Numbers.Port = rapid.IntRange(0, 100).Draw(t, "port")
		o.Numbers.PIN = rapid.Uint32Range(0, 100).Draw(t, "pin")
		if rapid.Bool().Draw(t, "cycle") {
			o.Next = o
		}
		return o
	})
}

// marked lists by hand every value the sensitive fields of o hold.
func marked(o *outer) []string {
	var out []string
	addInner := func(in *inner) {
		out = append(out, string(in.Key))
		for k, v := range in.Extra {
			out = append(out, k, v)
		}
	}
	out = append(out, o.Secret)
	if o.Nested != nil {
		addInner(o.Nested)
	}
	for i := range o.List {
		addInner(&o.List[i])
	}
	for _, in := range o.ByName {
		addInner(in)
	}
	if in, ok := o.Any.(inner); ok {
		addInner(&in)
	}
	if o.Numbers.PIN != 0 {
		out = append(out, fmt.Sprint(o.Numbers.PIN))
	}
	return out
}

// TestNoSecretSurvives is the package's promise: whatever the values and
// the text, no value of a marked field appears in what a Scrubber returns.
func TestNoSecretSurvives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := genOuter().Draw(t, "doc")
		secrets := marked(o)
		// A text made of the secrets, other fields' values and noise.
		var parts []string
		for range rapid.IntRange(0, 6).Draw(t, "parts") {
			if len(secrets) > 0 && rapid.Bool().Draw(t, "useSecret") {
				parts = append(parts, rapid.SampledFrom(secrets).Draw(t, "secretPart"))
			} else {
				parts = append(parts, genText().Draw(t, "noise"))
			}
		}
		text := strings.Join(parts, rapid.SampledFrom([]string{"", " ", "]", "["}).Draw(t, "sep"))

		s := redact.New(o)
		out := s.String(text)
		errOut := s.Error(errors.New(text))
		for _, secret := range secrets {
			if secret == "" {
				continue
			}
			if strings.Contains(out, secret) {
				t.Fatalf("String(%q) = %q holds the secret %q", text, out, secret)
			}
			if strings.Contains(errOut.Error(), secret) {
				t.Fatalf("Error(%q) = %q holds the secret %q", text, errOut, secret)
			}
		}
	})
}

func TestUnmarkedTypeCollectsNothing(t *testing.T) {
	type plain struct {
		Name string
		Tags map[string]string
	}
	if got := redact.Secrets(plain{Name: "x", Tags: map[string]string{"a": "b"}}, "text", 42, nil); got != nil {
		t.Fatalf("Secrets = %q, want none", got)
	}
	if s := redact.New(plain{Name: "x"}); s != nil {
		t.Fatalf("New of an unmarked value = %v, want nil", s)
	}
	var s *redact.Scrubber
	if got := s.String("abc"); got != "abc" {
		t.Fatalf("nil Scrubber changed the text: %q", got)
	}
	err := errors.New("e")
	if got := s.Error(err); got != err {
		t.Fatalf("nil Scrubber changed the error")
	}
}

func TestErrorKeepsChain(t *testing.T) {
	base := errors.New("base")
	s := redact.Of("pw")
	err := s.Error(fmt.Errorf("pw rejected: %w", base))
	if !errors.Is(err, base) || err.Error() != "[redacted] rejected: base" {
		t.Fatalf("got %v (Is base: %t)", err, errors.Is(err, base))
	}
	clean := errors.New("clean")
	if s.Error(clean) != clean {
		t.Fatalf("an error without a secret was wrapped")
	}
}

func TestUnmarkedAllocatesNothing(t *testing.T) {
	type plain struct{ Name string }
	v := &plain{Name: "x"}
	redact.New(v)
	if n := testing.AllocsPerRun(100, func() { redact.New(v) }); n > 1 {
		t.Fatalf("New of an unmarked value allocates %v times", n)
	}
}

// BenchmarkNew measures what a driver pays per use on a document with
// secrets, when the text holds none (the common case) and when it does.
func BenchmarkNew(b *testing.B) {
	o := &outer{Name: "n", Secret: "s3cret", Nested: &inner{Key: []byte("k3y")}}
	b.Run("clean", func(b *testing.B) {
		for b.Loop() {
			redact.New(o).String("a text without secrets")
		}
	})
	b.Run("secret", func(b *testing.B) {
		for b.Loop() {
			redact.New(o).String("a text with s3cret in it")
		}
	})
	type plain struct{ Name string }
	p := &plain{Name: "n"}
	b.Run("unmarked", func(b *testing.B) {
		for b.Loop() {
			redact.New(p).String("a text")
		}
	})
}
