package kube_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/store"
)

func TestObjectName(t *testing.T) {
	tests := []struct{ key, prefix string }{
		{"gw-1", "gw-1-"},
		{"team-a/gw-1", "team-a-gw-1-"},
		{"Team_A/GW.1", "team-a-gw-1-"},
		{"~:", ""},
		{strings.Repeat("k", store.MaxKeyLen), strings.Repeat("k", 63) + "-"},
	}
	for _, tt := range tests {
		got := kube.ObjectName(tt.key)
		if !strings.HasPrefix(got, tt.prefix) || len(got) != len(tt.prefix)+32 {
			t.Errorf("ObjectName(%q) = %q, want %q and 32 hex digits", tt.key, got, tt.prefix)
		}
	}
	if kube.ObjectName("a/b") == kube.ObjectName("a-b") || kube.ObjectName("A") == kube.ObjectName("a") {
		t.Error("keys that differ only in punctuation or case share a name")
	}
}

// keyGen draws valid document keys, biased towards ones that slug alike.
var keyGen = rapid.Custom(func(t *rapid.T) string {
	seg := rapid.StringMatching(`[A-Za-z0-9_.:~-]{1,20}`)
	var parts []string
	for range rapid.IntRange(1, 4).Draw(t, "segments") {
		s := seg.Draw(t, "segment")
		if s == "." || s == ".." {
			s = "x"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "/")
})

// TestObjectNameProperties: every valid key maps to a valid object name,
// the same one each time, and different keys to different names.
func TestObjectNameProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := keyGen.Draw(t, "a"), keyGen.Draw(t, "b")
		if err := store.ValidateKey(a); err != nil {
			t.Skip(err)
		}
		na := kube.ObjectName(a)
		if errs := validation.IsDNS1123Subdomain(na); len(errs) > 0 || len(na) > 96 {
			t.Fatalf("ObjectName(%q) = %q is not a valid name of at most 96 bytes: %v", a, na, errs)
		}
		if kube.ObjectName(a) != na {
			t.Fatalf("ObjectName(%q) is not deterministic", a)
		}
		if a != b && kube.ObjectName(b) == na {
			t.Fatalf("keys %q and %q share the name %q", a, b, na)
		}
	})
}

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{
		"Widget": "widgets", "ApiGateway": "apigateways", "Policy": "policies", "Gateway": "gateways",
		"Address": "addresses", "Box": "boxes", "Patch": "patches", "Mesh": "meshes", "Y": "ys",
	} {
		if got := kube.Plural(kind); got != want {
			t.Errorf("Plural(%q) = %q, want %q", kind, got, want)
		}
	}
}

// TestNew: bad configurations fail with an error, the caller's Config is
// not changed, and defaults are applied.
func TestNew(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name string
		cfg  kube.Config
		ok   bool
	}{
		{"valid", kube.Config{REST: rc, Kinds: []string{"Widget", "Gadget"}}, true},
		{"no REST", kube.Config{Kinds: []string{"Widget"}}, false},
		{"no kinds", kube.Config{REST: rc}, false},
		{"bad kind", kube.Config{REST: rc, Kinds: []string{"widget"}}, false},
		{"kind twice", kube.Config{REST: rc, Kinds: []string{"Widget", "Widget"}}, false},
		{"same plural", kube.Config{REST: rc, Kinds: []string{"Box", "Boxe"}}, false},
		{"bad namespace", kube.Config{REST: rc, Kinds: []string{"Widget"}, Namespace: "Not_Valid"}, false},
		{"group without dot", kube.Config{REST: rc, Kinds: []string{"Widget"}, Group: "tend"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kinds := append([]string(nil), tt.cfg.Kinds...)
			s, err := kube.New(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("New: error %v, want ok=%v", err, tt.ok)
			}
			if strings.Join(tt.cfg.Kinds, ",") != strings.Join(kinds, ",") || tt.cfg.Namespace != "" && tt.name == "valid" {
				t.Fatal("New changed the caller's Config")
			}
			if err == nil && (s.Namespace() != kube.DefaultNamespace || strings.Join(s.Kinds(), ",") != "Gadget,Widget") {
				t.Fatalf("defaults: namespace %q, kinds %q", s.Namespace(), s.Kinds())
			}
		})
	}
}
