package redactzap_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"pgregory.net/rapid"

	"github.com/tendhq/tend/redact"
	"github.com/tendhq/tend/redact/redactzap"
)

// newCore returns a JSON core writing every part of an entry to buf.
func newCore(buf *bytes.Buffer) zapcore.Core {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		TimeKey: "time", LevelKey: "level", NameKey: "logger", CallerKey: "caller", FunctionKey: "function",
		MessageKey: "msg", StacktraceKey: "stack", LineEnding: "\n",
		EncodeLevel: zapcore.LowercaseLevelEncoder, EncodeTime: zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder, EncodeCaller: zapcore.FullCallerEncoder,
	})
	return zapcore.NewCore(enc, zapcore.AddSync(buf), zapcore.DebugLevel)
}

// verbose is an error whose verbose form (%+v) holds what its message
// does not, as errors with stack traces do.
type verbose struct{ msg, detail string }

func (e verbose) Error() string { return e.msg }

func (e verbose) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('+') {
		fmt.Fprintf(f, "%s\n%s", e.msg, e.detail)
		return
	}
	fmt.Fprint(f, e.msg)
}

// group is an error of several causes, as go.uber.org/multierr makes.
type group []error

func (g group) Error() string   { return fmt.Sprintf("%d errors", len(g)) }
func (g group) Errors() []error { return g }

// object is a zapcore.ObjectMarshaler holding a key and a value.
type object struct{ key, value string }

func (o object) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString(o.key, o.value)
	return enc.AddArray("list", zapcore.ArrayMarshalerFunc(func(a zapcore.ArrayEncoder) error {
		a.AppendString("plain")
		return nil
	}))
}

type stringer string

func (s stringer) String() string { return string(s) }

type nested struct {
	Inner struct {
		Value string            `json:"value"`
		Map   map[string]string `json:"map"`
	} `json:"inner"`
}

// part logs an entry with secret in one part of it, through l or c, the
// same redacting logger and its core.
type part struct {
	name string
	log  func(l *zap.Logger, c zapcore.Core, secret string)
}

func entry(msg string) zapcore.Entry {
	return zapcore.Entry{Level: zapcore.InfoLevel, Time: time.Unix(0, 0), Message: msg}
}

// parts are the parts of an entry a secret can reach.
var parts = []part{
	{"logger name", func(l *zap.Logger, _ zapcore.Core, s string) { l.Named("sub-" + s).Info("hello") }},
	{"nested name", func(l *zap.Logger, _ zapcore.Core, s string) { l.Named("a").Named(s).Named("b").Info("hello") }},
	{"message", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("logging in with " + s) }},
	{"caller file", func(_ *zap.Logger, c zapcore.Core, s string) {
		e := entry("hello")
		e.Caller = zapcore.NewEntryCaller(0, "/home/"+s+"/main.go", 12, true)
		_ = c.Write(e, nil)
	}},
	{"caller function", func(_ *zap.Logger, c zapcore.Core, s string) {
		e := entry("hello")
		e.Caller = zapcore.EntryCaller{Defined: true, File: "main.go", Line: 1, Function: "main.login_" + s}
		_ = c.Write(e, nil)
	}},
	{"stack", func(_ *zap.Logger, c zapcore.Core, s string) {
		e := entry("hello")
		e.Stack = "goroutine 1 [running]:\nmain.login(" + s + ")"
		_ = c.Write(e, nil)
	}},
	{"string value", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.String("password", s)) }},
	{"field key", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.String("user-"+s, "x")) }},
	{"bool key", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.Bool("ok-"+s, true)) }},
	{"int key", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.Int("n-"+s, 1)) }},
	{"namespace", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Namespace("ns-"+s), zap.String("k", "v"))
	}},
	{"key in a namespace", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Namespace("ns"), zap.String("k-"+s, "v"))
	}},
	{"error message", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Error(errors.New("bad password "+s)))
	}},
	{"error verbose form", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Error(verbose{msg: "refused", detail: "with " + s}))
	}},
	{"error causes", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Error(group{errors.New("one"), errors.New("two " + s)}))
	}},
	{"stringer", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Stringer("who", stringer("user "+s)))
	}},
	{"byte string", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.ByteString("raw", []byte(s))) }},
	{"binary", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.Binary("blob", []byte(s))) }},
	{"object key", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Object("obj", object{key: s, value: "v"}))
	}},
	{"object value", func(l *zap.Logger, _ zapcore.Core, s string) {
		l.Info("hello", zap.Object("obj", object{key: "k", value: s}))
	}},
	{"array element", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.Strings("list", []string{"a", s})) }},
	{"reflected value", func(l *zap.Logger, _ zapcore.Core, s string) {
		var n nested
		n.Inner.Value = s
		l.Info("hello", zap.Any("spec", n))
	}},
	{"reflected map key", func(l *zap.Logger, _ zapcore.Core, s string) {
		var n nested
		n.Inner.Map = map[string]string{s: "v"}
		l.Info("hello", zap.Reflect("spec", n))
	}},
	{"With field", func(l *zap.Logger, _ zapcore.Core, s string) { l.With(zap.String("token", s)).Info("hello") }},
	{"With namespace", func(l *zap.Logger, _ zapcore.Core, s string) { l.With(zap.Namespace(s)).Info("hello", zap.Int("n", 1)) }},
	{"dict", func(l *zap.Logger, _ zapcore.Core, s string) { l.Info("hello", zap.Dict("d", zap.String("k", s))) }},
}

// output logs with secret in part p through a logger whose core is
// wrap(JSON core, scrubber of secret), and returns what was written.
func output(wrap func(zapcore.Core, *redact.Scrubber) zapcore.Core, p part, secret string) string {
	var buf bytes.Buffer
	c := wrap(newCore(&buf), redact.Of(secret))
	p.log(zap.New(c), c, secret)
	return buf.String()
}

// TestNoSecretInAnyPart puts a random secret in a random part of an entry:
// it is nowhere in the output, and the marker shows where it was.
func TestNoSecretInAnyPart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Letters and digits only, so the JSON output spells the secret as
		// it is.
		secret := rapid.StringMatching(`[A-Za-z0-9]{6,20}`).Draw(t, "secret")
		p := rapid.SampledFrom(parts).Draw(t, "part")
		out := output(redactzap.Core, p, secret)
		if strings.Contains(out, secret) {
			t.Fatalf("the secret is in the %s:\n%s", p.name, out)
		}
		if !strings.Contains(out, redact.Marker) {
			t.Fatalf("nothing redacted in the %s: the part is not reached:\n%s", p.name, out)
		}
	})
}

// TestEveryPartChecked runs each part once, so that none is left to
// chance.
func TestEveryPartChecked(t *testing.T) {
	for _, p := range parts {
		if out := output(redactzap.Core, p, "hunter2x"); strings.Contains(out, "hunter2x") || !strings.Contains(out, redact.Marker) {
			t.Errorf("%s: %s", p.name, out)
		}
	}
}

// messagesAndValues scrubs messages and string values only, as a
// redacting core that forgot the rest of an entry would.
type messagesAndValues struct {
	zapcore.Core
	s *redact.Scrubber
}

func (c messagesAndValues) With(fields []zapcore.Field) zapcore.Core {
	return messagesAndValues{Core: c.Core.With(c.scrub(fields)), s: c.s}
}

func (c messagesAndValues) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c messagesAndValues) Write(e zapcore.Entry, fields []zapcore.Field) error {
	e.Message = c.s.String(e.Message)
	return c.Core.Write(e, c.scrub(fields))
}

func (c messagesAndValues) scrub(fields []zapcore.Field) []zapcore.Field {
	out := make([]zapcore.Field, len(fields))
	for i, f := range fields {
		if f.Type == zapcore.StringType {
			f.String = c.s.String(f.String)
		}
		out[i] = f
	}
	return out
}

// TestNoSecretInAnyPartCatches plants a core that scrubs messages and
// string values only: the secret leaks through the logger's name, keys,
// the caller, errors and namespaces, and the check sees it.
func TestNoSecretInAnyPartCatches(t *testing.T) {
	wrap := func(c zapcore.Core, s *redact.Scrubber) zapcore.Core { return messagesAndValues{Core: c, s: s} }
	var leaked []string
	for _, p := range parts {
		if strings.Contains(output(wrap, p, "hunter2x"), "hunter2x") {
			leaked = append(leaked, p.name)
		}
	}
	for _, want := range []string{"logger name", "field key", "caller file", "error message", "error verbose form", "namespace"} {
		if !strings.Contains(strings.Join(leaked, ","), want) {
			t.Errorf("the planted core hides the secret in the %s: the check would not see a leak there", want)
		}
	}
	t.Logf("the planted core leaks through %d of %d parts: %s", len(leaked), len(parts), strings.Join(leaked, ", "))
}

// TestUnchangedWithoutSecret: a field without a secret reaches the core as
// it was, and no scrubber means the logger itself.
func TestUnchangedWithoutSecret(t *testing.T) {
	var buf bytes.Buffer
	l := zap.New(newCore(&buf))
	if redactzap.Logger(l, nil) != l || redactzap.Logger(nil, redact.Of("x")) != nil {
		t.Fatal("Logger wrapped a logger without secrets")
	}
	c := newCore(&buf)
	if redactzap.Core(c, nil) != c {
		t.Fatal("Core wrapped a core without secrets")
	}
	zap.New(redactzap.Core(c, redact.Of("hunter2x"))).Info("hello", zap.Duration("took", time.Second), zap.Int("n", 3), zap.Any("m", map[string]int{"a": 1}))
	if got := buf.String(); !strings.Contains(got, `"took":"1s","n":3,"m":{"a":1}`) {
		t.Fatalf("fields without secrets changed: %s", got)
	}
}

// TestSamplingKept: a sampling core under the redacting one still decides
// which entries are written.
func TestSamplingKept(t *testing.T) {
	var buf bytes.Buffer
	sampled := zapcore.NewSamplerWithOptions(newCore(&buf), time.Hour, 1, 0)
	l := redactzap.Logger(zap.New(sampled), redact.Of("hunter2x"))
	for range 3 {
		l.Info("logging in with hunter2x")
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 || strings.Contains(buf.String(), "hunter2x") {
		t.Fatalf("%d entries written through a sampler keeping 1, want 1, scrubbed:\n%s", n, buf.String())
	}
}
