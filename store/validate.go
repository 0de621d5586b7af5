package store

import (
	"fmt"
	"strings"
)

// Limits of the names a store accepts. They are strict on purpose: every
// backend (SQL columns, etcd keys, Kubernetes names through an encoding) can
// hold whatever passes them.
const (
	// MaxKindLen is the longest kind, in bytes.
	MaxKindLen = 63
	// MaxKeyLen is the longest document key, in bytes.
	MaxKeyLen = 253
	// MaxNameLen is the longest label name, label value, and finalizer
	// name after its domain, in bytes.
	MaxNameLen = 63
	// MaxDomainLen is the longest DNS domain used as a label-key or
	// finalizer prefix, in bytes.
	MaxDomainLen = 253
)

// ValidateKind checks a kind: an ASCII letter in upper case, then up to 62
// letters and digits ("ApiGateway"). The error wraps [ErrInvalid] and names
// the kind.
func ValidateKind(kind string) error {
	if len(kind) == 0 || len(kind) > MaxKindLen {
		return invalid("kind %q: must be 1 to %d characters", kind, MaxKindLen)
	}
	if c := kind[0]; c < 'A' || c > 'Z' {
		return invalid("kind %q: must start with an upper-case ASCII letter", kind)
	}
	for i := 1; i < len(kind); i++ {
		if !isAlnum(kind[i]) {
			return invalid("kind %q: must contain only ASCII letters and digits", kind)
		}
	}
	return nil
}

// ValidateKey checks a document key: 1 to 253 bytes of segments separated by
// single slashes ("team-a/gw-1"). A segment is made of ASCII letters, digits
// and the characters '-', '_', '.', ':' and '~', and is neither "." nor "..".
// So a key has no spaces, no leading, trailing or doubled slash and nothing a
// backend would have to escape beyond the slash. The error wraps
// [ErrInvalid] and names the key.
func ValidateKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return invalid("key %q: must be 1 to %d bytes", key, MaxKeyLen)
	}
	start := 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) && key[i] != '/' {
			if !isKeyByte(key[i]) {
				return invalid("key %q: character %q is not allowed", key, key[i])
			}
			continue
		}
		switch seg := key[start:i]; seg {
		case "":
			return invalid("key %q: empty segment (leading, trailing or doubled '/')", key)
		case ".", "..":
			return invalid("key %q: segment %q is not allowed", key, seg)
		}
		start = i + 1
	}
	return nil
}

// ValidateFinalizer checks a finalizer name: a DNS domain with at least one
// dot, a slash, and a name of 1 to 63 letters, digits, '-', '_' and '.'
// that starts and ends with a letter or digit ("example.com/cleanup"). The
// error wraps [ErrInvalid] and names the finalizer.
func ValidateFinalizer(name string) error {
	domain, rest, ok := strings.Cut(name, "/")
	if !ok {
		return invalid("finalizer %q: must be domain-qualified, as in \"example.com/cleanup\"", name)
	}
	if !strings.Contains(domain, ".") {
		return invalid("finalizer %q: domain %q must contain a dot", name, domain)
	}
	if msg := checkDomain(domain); msg != "" {
		return invalid("finalizer %q: domain %q %s", name, domain, msg)
	}
	if msg := checkName(rest); msg != "" {
		return invalid("finalizer %q: name %q %s", name, rest, msg)
	}
	return nil
}

// ValidateLabelKey checks a label key as Kubernetes does: an optional DNS
// domain prefix and a slash, then a name of 1 to 63 letters, digits, '-',
// '_' and '.' that starts and ends with a letter or digit ("app",
// "example.com/tier"). The error wraps [ErrInvalid] and names the key.
func ValidateLabelKey(key string) error {
	name := key
	if domain, rest, ok := strings.Cut(key, "/"); ok {
		if msg := checkDomain(domain); msg != "" {
			return invalid("label key %q: prefix %q %s", key, domain, msg)
		}
		name = rest
	}
	if msg := checkName(name); msg != "" {
		return invalid("label key %q: name %q %s", key, name, msg)
	}
	return nil
}

// ValidateLabelValue checks a label value: empty, or 1 to 63 letters, digits,
// '-', '_' and '.' that starts and ends with a letter or digit. The error
// wraps [ErrInvalid] and names the value.
func ValidateLabelValue(value string) error {
	if value == "" {
		return nil
	}
	if msg := checkName(value); msg != "" {
		return invalid("label value %q: %s", value, msg)
	}
	return nil
}

// ValidateLabels checks every key with [ValidateLabelKey] and every value
// with [ValidateLabelValue].
func ValidateLabels(labels map[string]string) error {
	for k, v := range labels {
		if err := ValidateLabelKey(k); err != nil {
			return err
		}
		if err := ValidateLabelValue(v); err != nil {
			return fmt.Errorf("label %q: %w", k, err)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// checkName returns why s is not a qualified name, or "".
func checkName(s string) string {
	if len(s) == 0 || len(s) > MaxNameLen {
		return fmt.Sprintf("must be 1 to %d characters", MaxNameLen)
	}
	if !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return "must start and end with an ASCII letter or digit"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return fmt.Sprintf("must not contain %q", c)
		}
	}
	return ""
}

// checkDomain returns why s is not a lower-case DNS subdomain, or "".
func checkDomain(s string) string {
	if len(s) == 0 || len(s) > MaxDomainLen {
		return fmt.Sprintf("must be 1 to %d characters", MaxDomainLen)
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 {
			return "must be dot-separated labels of 1 to 63 characters"
		}
		if !isLowerAlnum(label[0]) || !isLowerAlnum(label[len(label)-1]) {
			return "must have labels that start and end with a lower-case letter or digit"
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isLowerAlnum(c) && c != '-' {
				return fmt.Sprintf("must not contain %q", c)
			}
		}
	}
	return ""
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isKeyByte(c byte) bool {
	return isAlnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '~'
}
