package console

import (
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/tendhq/tend/registry"

	"go.uber.org/zap"

	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

// ErrInvalidConfig is returned by [New] for a configuration it cannot use.
var ErrInvalidConfig = errors.New("console: invalid config")

// Config configures a [Console].
type Config struct {
	// Store is the store whose documents the console shows and acts on.
	// Required. It must be configured with registry.Kinds() beside the
	// driven kinds and their histories.
	Store store.Backend

	// Prefix is the path the console is served under, beginning and ending
	// with a slash: mount the console there (mux.Handle("/console/", c))
	// without stripping it. Empty means "/".
	Prefix string

	// Authorize decides whether the request r may carry out action a: it
	// returns nil to allow it, or an error saying why not (the answer is
	// 403 Forbidden with the error's text). It runs only for requests that
	// passed the cross-origin and session-token checks. Nil means the
	// console is read-only: every action is refused.
	Authorize func(r *http.Request, a Action) error

	// Actor names who acts for r, as recorded in the document's status and
	// history. Nil, or an empty name, means "console".
	Actor func(r *http.Request) string

	// Key is the secret the session tokens of the action forms are derived
	// from. Replicas that serve the same users behind one address must
	// share it. Empty means a random key per Console: forms rendered by
	// another replica, or before a restart, are refused and must be
	// loaded again.
	Key []byte

	// CrossOrigin checks every POST for a cross-origin request. Nil means
	// http.NewCrossOriginProtection(): same-origin browser requests and
	// requests from programs other than browsers pass.
	CrossOrigin *http.CrossOriginProtection

	// Logger receives the errors the console answers with a 500. Nil
	// means no logs.
	Logger *zap.Logger

	// Now is the clock pages count ages and deadlines with. Nil means
	// time.Now.
	Now func() time.Time

	// Reconciles, when set, returns the last reconciles of a document,
	// shown on its page under "Last reconciles" with their triggers,
	// result and duration: the Reconciles method of the manager.Manager
	// that drives the kind, when the console runs in its process. Nil
	// means the page has no such section.
	Reconciles func(kind, key string) []manager.Reconcile
}

// Console is the web console: an http.Handler. Create it with [New].
type Console struct {
	store     store.Backend
	reader    *oncall.Client
	prefix    string
	authorize func(*http.Request, Action) error
	actor     func(*http.Request) string
	key       []byte
	origin    *http.CrossOriginProtection
	log       *zap.Logger
	now       func() time.Time
	recs      func(kind, key string) []manager.Reconcile // nil when not shown
	pages     map[string]*template.Template
	mux       *http.ServeMux
}

var _ http.Handler = (*Console)(nil)

//go:embed web
var web embed.FS

// New returns a console serving cfg.Store. It starts no goroutine.
func New(cfg Config) (*Console, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: Store is nil", ErrInvalidConfig)
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "/"
	}
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, "{} \t\n") {
		return nil, fmt.Errorf("%w: Prefix %q must begin and end with a slash and hold no spaces or braces", ErrInvalidConfig, cfg.Prefix)
	}
	reader, err := oncall.New(cfg.Store, oncall.Config{})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c := &Console{
		store:     cfg.Store,
		reader:    reader,
		prefix:    prefix,
		authorize: cfg.Authorize,
		actor:     cfg.Actor,
		key:       append([]byte(nil), cfg.Key...),
		origin:    cfg.CrossOrigin,
		log:       cfg.Logger,
		now:       cfg.Now,
		recs:      cfg.Reconciles,
	}
	if len(c.key) == 0 {
		c.key = make([]byte, 32)
		_, _ = rand.Read(c.key) // never fails (crypto/rand's contract)
	}
	if c.origin == nil {
		c.origin = http.NewCrossOriginProtection()
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.pages, err = parsePages(prefix); err != nil {
		return nil, err // the embedded templates are broken: a bug of this package
	}
	c.mux = http.NewServeMux()
	assets, _ := fs.Sub(web, "web/assets")
	c.mux.Handle("GET "+prefix+"assets/", http.StripPrefix(prefix+"assets/", http.FileServerFS(assets)))
	c.mux.HandleFunc("GET "+prefix+"{$}", c.serveKinds)
	c.mux.HandleFunc("GET "+prefix+"kinds/{kind}", c.serveKind)
	c.mux.HandleFunc("GET "+prefix+"kinds/{kind}/objects/{key...}", c.serveObject)
	c.mux.HandleFunc("POST "+prefix+"kinds/{kind}/objects/{key...}", c.serveAction)
	c.mux.HandleFunc("GET "+prefix+"kinds/{kind}/bulk", c.serveBulkPreview)
	c.mux.HandleFunc("POST "+prefix+"kinds/{kind}/bulk", c.serveBulk)
	c.mux.HandleFunc("GET "+prefix+"events", c.serveEvents)
	return c, nil
}

// ServeHTTP serves the console's pages, assets, event streams and actions
// under [Config.Prefix].
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mux.ServeHTTP(w, r)
}

// fail answers an error: the store's sentinels as their status codes,
// anything else as a 500, logged.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrUnknownKind), errors.Is(err, registry.ErrUnregistered),
		errors.Is(err, oncall.ErrNotDriven):
		code = http.StatusNotFound
	case errors.Is(err, oncall.ErrInvalidAction), errors.Is(err, store.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, oncall.ErrServed), errors.Is(err, store.ErrConflict):
		code = http.StatusConflict
	case r.Context().Err() != nil:
		return // the client went away
	default:
		c.log.Error("console request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
	}
	http.Error(w, err.Error(), code)
}
