package store

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Operator is the comparison of one selector [Requirement].
type Operator string

// The operators, with the syntax [ParseSelector] accepts for each.
const (
	Equals       Operator = "="      // "k=v" or "k==v": the label is present and equal to v
	NotEquals    Operator = "!="     // "k!=v": the label is absent or differs from v
	In           Operator = "in"     // "k in (a,b)": the label is present and one of the values
	NotIn        Operator = "notin"  // "k notin (a,b)": the label is absent or none of the values
	Exists       Operator = "exists" // "k": the label is present
	DoesNotExist Operator = "!"      // "!k": the label is absent
)

// Requirement is one condition of a [Selector]. Exists ("k") and
// DoesNotExist ("!k") have no values; Equals and NotEquals have one; In and
// NotIn at least two (a set of one is written as Equals or NotEquals).
type Requirement struct {
	Key      string
	Operator Operator
	// Values are sorted and distinct.
	Values []string
}

// Matches reports whether labels satisfy r.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case Equals:
		return ok && v == r.Values[0]
	case NotEquals:
		return !ok || v != r.Values[0]
	case In:
		return ok && slices.Contains(r.Values, v)
	case NotIn:
		return !ok || !slices.Contains(r.Values, v)
	case Exists:
		return ok
	case DoesNotExist:
		return !ok
	}
	return false
}

// String returns r in the syntax of [ParseSelector].
func (r Requirement) String() string {
	switch r.Operator {
	case Exists:
		return r.Key
	case DoesNotExist:
		return "!" + r.Key
	case In, NotIn:
		return r.Key + " " + string(r.Operator) + " (" + strings.Join(r.Values, ",") + ")"
	}
	return r.Key + string(r.Operator) + r.Values[0]
}

// Selector selects documents by their labels: a document matches when it
// satisfies every requirement. The zero Selector matches everything. A
// Selector is immutable and safe to share.
type Selector struct {
	reqs []Requirement // canonical: sorted by key then operator, no duplicates
	err  error         // set by SelectorFromMap on invalid input
}

// ParseSelector parses a comma-separated list of requirements in the syntax
// of Kubernetes label selectors:
//
//	k=v  k==v  k!=v  k in (a,b)  k notin (a,b)  k  !k
//
// Keys must pass [ValidateLabelKey] and values [ValidateLabelValue]; the
// values of a set must not be empty. Spaces around tokens are ignored. An
// empty or blank string is the selector that matches everything. Errors wrap
// [ErrInvalid] and quote the selector.
func ParseSelector(s string) (Selector, error) {
	p := parser{src: s}
	var reqs []Requirement
	if p.skipSpace(); p.pos == len(s) {
		return Selector{}, nil
	}
	for {
		r, err := p.requirement()
		if err != nil {
			return Selector{}, fmt.Errorf("%w: selector %q: %v", ErrInvalid, s, err)
		}
		reqs = append(reqs, r)
		if p.skipSpace(); p.pos == len(s) {
			break
		}
		if s[p.pos] != ',' {
			return Selector{}, fmt.Errorf("%w: selector %q: expected ',' at offset %d", ErrInvalid, s, p.pos)
		}
		p.pos++
	}
	return Selector{reqs: canonical(reqs)}, nil
}

// MustParseSelector is [ParseSelector] for selectors known when the program
// is written; it panics on a malformed one.
func MustParseSelector(s string) Selector {
	sel, err := ParseSelector(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// SelectorFromMap returns the selector requiring each label of m to equal
// its value. If m holds an invalid label, the selector matches nothing and
// [Selector.Validate] (which backends call in List) reports it.
func SelectorFromMap(m map[string]string) Selector {
	if err := ValidateLabels(m); err != nil {
		return Selector{err: fmt.Errorf("selector from map: %w", err)}
	}
	reqs := make([]Requirement, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		reqs = append(reqs, Requirement{Key: k, Operator: Equals, Values: []string{m[k]}})
	}
	return Selector{reqs: reqs}
}

// Empty reports whether s has no requirements and so matches everything.
func (s Selector) Empty() bool { return len(s.reqs) == 0 && s.err == nil }

// Validate returns the error that made s invalid, or nil. Only a selector
// built by [SelectorFromMap] from invalid labels can be invalid.
func (s Selector) Validate() error { return s.err }

// Matches reports whether labels satisfy every requirement of s.
func (s Selector) Matches(labels map[string]string) bool {
	if s.err != nil {
		return false
	}
	for _, r := range s.reqs {
		if !r.Matches(labels) {
			return false
		}
	}
	return true
}

// Requirements returns a copy of the requirements of s, sorted by key and
// then operator, for backends that translate selectors into their own
// queries.
func (s Selector) Requirements() []Requirement {
	out := make([]Requirement, len(s.reqs))
	for i, r := range s.reqs {
		r.Values = slices.Clone(r.Values)
		out[i] = r
	}
	return out
}

// String returns the canonical form of s: requirements sorted by key and
// operator, set values sorted, "=" for equality. Parsing it gives back an
// equal selector.
func (s Selector) String() string {
	parts := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

var operatorOrder = map[Operator]int{Exists: 0, DoesNotExist: 1, Equals: 2, NotEquals: 3, In: 4, NotIn: 5}

// canonical sorts values and requirements, turns sets of one value into
// equality, and drops duplicate requirements.
func canonical(reqs []Requirement) []Requirement {
	for i := range reqs {
		r := &reqs[i]
		slices.Sort(r.Values)
		r.Values = slices.Compact(r.Values)
		if len(r.Values) == 1 {
			switch r.Operator {
			case In:
				r.Operator = Equals
			case NotIn:
				r.Operator = NotEquals
			}
		}
	}
	slices.SortFunc(reqs, func(a, b Requirement) int {
		return cmp.Or(
			strings.Compare(a.Key, b.Key),
			cmp.Compare(operatorOrder[a.Operator], operatorOrder[b.Operator]),
			slices.Compare(a.Values, b.Values),
		)
	})
	return slices.CompactFunc(reqs, func(a, b Requirement) bool {
		return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
	})
}

type parser struct {
	src string
	pos int
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// word reads a run of characters that may appear in label keys and values.
func (p *parser) word() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' && c != '/' {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) peek(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }

func (p *parser) requirement() (Requirement, error) {
	p.skipSpace()
	if p.peek("!") && !p.peek("!=") {
		p.pos++
		p.skipSpace()
		key, err := p.key()
		return Requirement{Key: key, Operator: DoesNotExist}, err
	}
	key, err := p.key()
	if err != nil {
		return Requirement{}, err
	}
	p.skipSpace()
	var op Operator
	switch {
	case p.pos == len(p.src) || p.src[p.pos] == ',':
		return Requirement{Key: key, Operator: Exists}, nil
	case p.peek("=="):
		op, p.pos = Equals, p.pos+2
	case p.peek("="):
		op, p.pos = Equals, p.pos+1
	case p.peek("!="):
		op, p.pos = NotEquals, p.pos+2
	default:
		at := p.pos
		switch w := p.word(); w {
		case "in":
			op = In
		case "notin":
			op = NotIn
		default:
			return Requirement{}, fmt.Errorf("expected an operator after %q at offset %d", key, at)
		}
	}
	if op == In || op == NotIn {
		values, err := p.set()
		return Requirement{Key: key, Operator: op, Values: values}, err
	}
	p.skipSpace()
	v, err := p.value()
	return Requirement{Key: key, Operator: op, Values: []string{v}}, err
}

func (p *parser) key() (string, error) {
	at := p.pos
	k := p.word()
	if k == "" {
		return "", fmt.Errorf("expected a label key at offset %d", at)
	}
	return k, ValidateLabelKey(k)
}

func (p *parser) value() (string, error) {
	v := p.word()
	return v, ValidateLabelValue(v)
}

func (p *parser) set() ([]string, error) {
	p.skipSpace()
	if !p.peek("(") {
		return nil, fmt.Errorf("expected '(' at offset %d", p.pos)
	}
	p.pos++
	var values []string
	for {
		p.skipSpace()
		at := p.pos
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if v == "" {
			return nil, fmt.Errorf("expected a value at offset %d", at)
		}
		values = append(values, v)
		p.skipSpace()
		switch {
		case p.peek(","):
			p.pos++
		case p.peek(")"):
			p.pos++
			return values, nil
		default:
			return nil, fmt.Errorf("expected ',' or ')' at offset %d", p.pos)
		}
	}
}
