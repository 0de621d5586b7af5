package redact

import (
	"slices"
	"strings"
	"sync"
)

// Scrubber removes secrets from text. A nil *Scrubber is valid and removes
// nothing; [New] returns nil when there is nothing to remove.
type Scrubber struct {
	secrets []string // longest first

	once     sync.Once // makes replacer, the first time a text holds a secret
	replacer *strings.Replacer
}

// New returns a Scrubber of the secrets the values hold (see [Secrets]), or
// nil when they hold none.
func New(values ...any) *Scrubber {
	return Of(Secrets(values...)...)
}

// Of returns a Scrubber of the secrets given, or nil when none is
// non-empty.
func Of(secrets ...string) *Scrubber {
	if !slices.ContainsFunc(secrets, func(secret string) bool { return secret != "" }) {
		return nil
	}
	s := &Scrubber{}
	for _, secret := range secrets {
		if secret != "" {
			s.secrets = append(s.secrets, secret)
		}
	}
	if len(s.secrets) == 0 {
		return nil
	}
	// Longer secrets first, so one that contains another is replaced
	// whole.
	slices.SortFunc(s.secrets, longestFirst)
	s.secrets = slices.Compact(s.secrets)
	return s
}

// String returns text with every secret replaced by [Marker]. The result
// never contains a secret: where a replacement would form one again (a
// secret that is part of the marker, or one that straddles a marker and
// its neighbour), the secrets are removed instead, until none is left.
func (s *Scrubber) String(text string) string {
	if s == nil || !s.contains(text) {
		return text
	}
	s.once.Do(func() {
		pairs := make([]string, 0, 2*len(s.secrets))
		for _, secret := range s.secrets {
			pairs = append(pairs, secret, Marker)
		}
		s.replacer = strings.NewReplacer(pairs...)
	})
	if out := s.replacer.Replace(text); !s.contains(out) {
		return out
	}
	// Each pass makes the text shorter, so this ends.
	for s.contains(text) {
		for _, secret := range s.secrets {
			text = strings.ReplaceAll(text, secret, "")
		}
	}
	return text
}

// contains reports whether text holds a secret.
func (s *Scrubber) contains(text string) bool {
	for _, secret := range s.secrets {
		if strings.Contains(text, secret) {
			return true
		}
	}
	return false
}

// Error returns err with its message scrubbed: an error whose Error method
// returns [Scrubber.String] of err's message and whose Unwrap returns err,
// so errors.Is and errors.As see the same chain. It returns err itself when
// its message holds no secret, and nil for nil.
//
// The errors in the chain still hold their own messages: print the error
// Error returns, not one found in its chain.
func (s *Scrubber) Error(err error) error {
	if s == nil || err == nil {
		return err
	}
	msg := err.Error()
	if !s.contains(msg) {
		return err
	}
	return &scrubbedError{msg: s.String(msg), err: err}
}

// scrubbedError is an error whose message was scrubbed.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
