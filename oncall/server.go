package oncall

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// ServerConfig configures a [Server].
type ServerConfig struct {
	// Store is the store the server reads and acts on. Required.
	Store store.Backend

	// Prefix is the path the server is served under, beginning and ending
	// with a slash: mount it there (mux.Handle("/oncall/", s)) without
	// stripping it. Empty means "/".
	Prefix string

	// Token is the bearer token programs (tend --server, a [Remote])
	// present in their Authorization header; it is compared in constant
	// time. Empty means no token is accepted: only requests Authorize lets
	// in are served.
	Token string

	// Authorize decides whether the request r may do what a asks: nil to
	// allow it, or an error saying why not (the answer is 403 Forbidden).
	// It is asked about every action, and about every request without a
	// bearer token (a browser's, which must also pass CrossOrigin); a
	// request with the right token reads without asking it. Nil means the
	// server is read-only, for token holders only.
	Authorize func(r *http.Request, a Access) error

	// Actor names who acts for r, as recorded in the documents' status and
	// history. Nil means the name the request gives in its Tend-Actor
	// header (a token holder is trusted to name itself), or "oncall".
	Actor func(r *http.Request) string

	// CrossOrigin checks every request without a bearer token for a
	// cross-origin browser request. Nil means
	// http.NewCrossOriginProtection().
	CrossOrigin *http.CrossOriginProtection

	// History configures the history entries the server's actions record.
	History history.RecorderConfig

	// Logger receives the errors the server answers with a 500. Nil means
	// no logs.
	Logger *zap.Logger
}

// Access is what a request asks of a [Server], as
// [ServerConfig.Authorize] is asked about it.
type Access struct {
	// Token reports whether the request carried the server's bearer token.
	Token bool
	// Kind is the kind of the documents the request reads or acts on, and
	// Key the document's key for a request about one document.
	Kind, Key string
	// Action is the action asked for; for a read, its Name is empty.
	Action Action
	// Bulk reports that the action is asked of every document a selection
	// selects.
	Bulk bool
}

// ActorHeader is the header in which a request names who acts, when
// [ServerConfig.Actor] is nil.
const ActorHeader = "Tend-Actor"

// Server serves the on-call API over HTTP: reads, registrations, history,
// a watch (JSON lines), command waits, selections, actions and bulk
// actions, for a [Remote] (tend --server). It is an http.Handler that the
// program mounts where it wants it, beside a console or as a Manager
// handler's fallback; it listens on nothing of its own. Create it with
// [NewServer].
type Server struct {
	client    *Client
	prefix    string
	token     []byte
	authorize func(*http.Request, Access) error
	actor     func(*http.Request) string
	origin    *http.CrossOriginProtection
	log       *zap.Logger
	mux       *http.ServeMux
}

var _ http.Handler = (*Server)(nil)

// NewServer returns a server of cfg.Store. It starts no goroutine.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: NewServer needs a Store", ErrInvalidConfig)
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "/"
	}
	if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, "{} \t\n") {
		return nil, fmt.Errorf("%w: Prefix %q must begin and end with a slash and hold no spaces or braces", ErrInvalidConfig, cfg.Prefix)
	}
	client, err := New(cfg.Store, Config{History: cfg.History})
	if err != nil {
		return nil, err
	}
	s := &Server{
		client:    client,
		prefix:    prefix,
		token:     []byte(cfg.Token),
		authorize: cfg.Authorize,
		actor:     cfg.Actor,
		origin:    cfg.CrossOrigin,
		log:       cfg.Logger,
	}
	if s.origin == nil {
		s.origin = http.NewCrossOriginProtection()
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.actor == nil {
		s.actor = func(r *http.Request) string {
			if a := r.Header.Get(ActorHeader); a != "" {
				return a
			}
			return "oncall"
		}
	}
	s.mux = http.NewServeMux()
	for pattern, h := range map[string]http.HandlerFunc{
		"GET registrations":          s.serveRegistrations,
		"GET registrations/{kind}":   s.serveRegistration,
		"GET kinds/{kind}/served":    s.serveServed,
		"GET kinds/{kind}/document":  s.serveGet,
		"GET kinds/{kind}/documents": s.serveSelect,
		"GET kinds/{kind}/history":   s.serveHistory,
		"GET kinds/{kind}/watch":     s.serveWatch,
		"GET kinds/{kind}/wait":      s.serveWait,
		"GET kinds/{kind}/await":     s.serveAwait,
		"POST kinds/{kind}/diff":     s.serveDiffMachine,
		"POST kinds/{kind}/intent":   s.serveSetIntent,
		"POST kinds/{kind}/actions":  s.serveAction,
		"POST kinds/{kind}/bulk":     s.serveBulk,
	} {
		method, path, _ := strings.Cut(pattern, " ")
		s.mux.HandleFunc(method+" "+prefix+path, h)
	}
	return s, nil
}

// ServeHTTP serves the API under [ServerConfig.Prefix].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// allow authenticates and authorizes r for a; on refusal it answers and
// returns nil. It returns the client to act with.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, a Access) *Client {
	if err := s.check(r, &a); err != nil {
		if errors.Is(err, ErrUnauthorized) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tend"`)
		}
		s.fail(w, r, err)
		return nil
	}
	c := *s.client
	c.actor = s.actor(r)
	return &c
}

func (s *Server) check(r *http.Request, a *Access) error {
	if h := r.Header.Get("Authorization"); h != "" {
		token, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || len(s.token) == 0 || subtle.ConstantTimeCompare([]byte(token), s.token) != 1 {
			return ErrUnauthorized
		}
		a.Token = true
		switch {
		case a.Action.Name == "":
			return nil
		case s.authorize == nil:
			return fmt.Errorf("%w: the server is read-only", ErrForbidden)
		}
	} else {
		if err := s.origin.Check(r); err != nil {
			return fmt.Errorf("%w: %w", ErrForbidden, err)
		}
		if s.authorize == nil {
			return ErrUnauthorized
		}
		if err := s.authorize(r, *a); err != nil {
			return fmt.Errorf("%w: %w", ErrUnauthorized, err)
		}
		return nil
	}
	if err := s.authorize(r, *a); err != nil {
		return fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	return nil
}

// fail answers err: a known error with its row's status and code, any
// other as a 500, logged.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, body, known := encodeError(err)
	if !known {
		if r.Context().Err() != nil {
			return // the client went away
		}
		s.log.Error("on-call request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// reply answers v as JSON, or err.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serveRegistrations(w http.ResponseWriter, r *http.Request) {
	if c := s.allow(w, r, Access{}); c != nil {
		regs, err := c.Registrations(r.Context())
		s.reply(w, r, regs, err)
	}
}

func (s *Server) serveRegistration(w http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	if c := s.allow(w, r, Access{Kind: kind}); c != nil {
		reg, err := c.Registration(r.Context(), kind)
		s.reply(w, r, reg, err)
	}
}

func (s *Server) serveServed(w http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	if c := s.allow(w, r, Access{Kind: kind}); c != nil {
		served, err := c.Served(r.Context(), kind)
		s.reply(w, r, served, err)
	}
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	kind, key := r.PathValue("kind"), r.URL.Query().Get("key")
	if c := s.allow(w, r, Access{Kind: kind, Key: key}); c != nil {
		v, err := c.Get(r.Context(), kind, key)
		s.reply(w, r, wireViewOf(v), err)
	}
}

func (s *Server) serveSelect(w http.ResponseWriter, r *http.Request) {
	sel, err := selectionOf(r.PathValue("kind"), r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if c := s.allow(w, r, Access{Kind: sel.Kind, Key: sel.Key}); c != nil {
		views, err := c.Select(r.Context(), sel)
		s.reply(w, r, wireViewsOf(views), err)
	}
}

func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request) {
	kind, key := r.PathValue("kind"), r.URL.Query().Get("key")
	if c := s.allow(w, r, Access{Kind: kind, Key: key}); c != nil {
		entries, err := c.History(r.Context(), kind, key)
		s.reply(w, r, entries, err)
	}
}

// serveWatch writes the events of a watch as JSON lines until the client
// goes away.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request) {
	sel, err := selectionOf(r.PathValue("kind"), r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c := s.allow(w, r, Access{Kind: sel.Kind, Key: sel.Key})
	if c == nil {
		return
	}
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	started := false
	err = c.Watch(r.Context(), sel, func(ev Event) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/jsonl")
			w.WriteHeader(http.StatusOK)
		}
		if err := enc.Encode(wireEvent{Type: ev.Type, Views: wireViewsOf(ev.Views), Revision: ev.Revision}); err != nil {
			return err
		}
		return rc.Flush()
	})
	if !started && r.Context().Err() == nil {
		s.fail(w, r, err)
	}
}

func (s *Server) serveWait(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, key := r.PathValue("kind"), q.Get("key")
	if c := s.allow(w, r, Access{Kind: kind, Key: key}); c != nil {
		e, err := c.Wait(r.Context(), kind, key, q.Get("command"))
		s.reply(w, r, e, err)
	}
}

func (s *Server) serveAwait(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, key := r.PathValue("kind"), q.Get("key")
	var generation int64
	if g := q.Get("generation"); g != "" {
		var err error
		if generation, err = strconv.ParseInt(g, 10, 64); err != nil {
			s.fail(w, r, fmt.Errorf("%w: generation %q is not a number", ErrInvalidAction, g))
			return
		}
	}
	if c := s.allow(w, r, Access{Kind: kind, Key: key}); c != nil {
		v, err := c.Await(r.Context(), kind, key, generation)
		s.reply(w, r, wireViewOf(v), err)
	}
}

func (s *Server) serveDiffMachine(w http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	var next statemachine.Descriptor
	if err := decodeBody(r, &next, maxActionBody); err != nil {
		s.fail(w, r, err)
		return
	}
	if c := s.allow(w, r, Access{Kind: kind}); c != nil {
		diff, err := c.DiffMachine(r.Context(), kind, next)
		s.reply(w, r, diff, err)
	}
}

// intentRequest is the body of [Remote.SetIntent].
type intentRequest struct {
	Key    string `json:"key"`
	Field  string `json:"field"`
	Intent string `json:"intent"`
}

func (s *Server) serveSetIntent(w http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	var req intentRequest
	if err := decodeBody(r, &req, maxActionBody); err != nil {
		s.fail(w, r, err)
		return
	}
	if c := s.allow(w, r, Access{Kind: kind, Key: req.Key, Action: Action{Name: ActionSetIntent}}); c != nil {
		s.reply(w, r, struct{}{}, c.SetIntent(r.Context(), kind, req.Key, req.Field, req.Intent))
	}
}

// actionRequest is the body of an action.
type actionRequest struct {
	Key    string `json:"key"`
	Action Action `json:"action"`
}

// actionReply is the answer to an action: the command it issued, if any.
type actionReply struct {
	Command *statemachine.Command `json:"command,omitempty"`
}

func (s *Server) serveAction(w http.ResponseWriter, r *http.Request) {
	kind := r.PathValue("kind")
	var req actionRequest
	if err := decodeBody(r, &req, maxActionBody); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := req.Action.Check(); err != nil {
		s.fail(w, r, err)
		return
	}
	c := s.allow(w, r, Access{Kind: kind, Key: req.Key, Action: req.Action})
	if c == nil {
		return
	}
	cmd, err := c.Apply(r.Context(), kind, req.Key, req.Action)
	var rep actionReply
	if cmd.ID != "" {
		rep.Command = &cmd
	}
	s.reply(w, r, rep, err)
}

func (s *Server) serveBulk(w http.ResponseWriter, r *http.Request) {
	var b Bulk
	if err := decodeBody(r, &b, maxBulkBody); err != nil {
		s.fail(w, r, err)
		return
	}
	b.Selection.Kind = r.PathValue("kind")
	if err := b.Action.Check(); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := b.Selection.Check(); err != nil {
		s.fail(w, r, err)
		return
	}
	if c := s.allow(w, r, Access{Kind: b.Selection.Kind, Action: b.Action, Bulk: true}); c != nil {
		res, err := c.Bulk(r.Context(), b)
		s.reply(w, r, res, err)
	}
}

// Bounds of the bodies of requests: an action's, and a bulk action's, which
// carries the preview's revision of every document selected (about 30
// bytes each).
const (
	maxActionBody = 64 << 10
	maxBulkBody   = 64 << 20
)

// decodeBody reads r's JSON body, at most limit bytes, into v.
func decodeBody(r *http.Request, v any, limit int64) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: the request's body: %w", store.ErrInvalid, err)
	}
	return nil
}

// selectionOf reads a selection from a query: key, selector, phase (one
// or more), stuck, all.
func selectionOf(kind string, q url.Values) (Selection, error) {
	sel := Selection{Kind: kind, Key: q.Get("key"), Phases: q["phase"]}
	var err error
	if sel.Selector, err = store.ParseSelector(q.Get("selector")); err != nil {
		return sel, err
	}
	for name, b := range map[string]*bool{"stuck": &sel.Stuck, "all": &sel.All} {
		if v := q.Get(name); v != "" {
			if *b, err = strconv.ParseBool(v); err != nil {
				return sel, fmt.Errorf("%w: %s=%q", store.ErrInvalid, name, v)
			}
		}
	}
	return sel, nil
}

// query returns sel as a query.
func (sel Selection) query() url.Values {
	q := url.Values{}
	if sel.Key != "" {
		q.Set("key", sel.Key)
	}
	if !sel.Selector.Empty() {
		q.Set("selector", sel.Selector.String())
	}
	for _, p := range sel.Phases {
		q.Add("phase", p)
	}
	if sel.Stuck {
		q.Set("stuck", "true")
	}
	if sel.All {
		q.Set("all", "true")
	}
	return q
}

// wireView is a View on the wire: the document as stored, which the
// Remote decodes as the Client does.
type wireView struct {
	Meta   store.Meta `json:"meta"`
	Spec   []byte     `json:"spec,omitempty"`
	Status []byte     `json:"status,omitempty"`
}

func wireViewOf(v View) wireView { return wireView{Meta: v.Meta, Spec: v.Spec, Status: v.Status} }

func wireViewsOf(views []View) []wireView {
	out := make([]wireView, len(views))
	for i, v := range views {
		out[i] = wireViewOf(v)
	}
	return out
}

func (wv wireView) view() (View, error) {
	return Decode(store.Document{Meta: wv.Meta, Spec: wv.Spec, Status: wv.Status})
}

// wireEvent is an Event on the wire.
type wireEvent struct {
	Type     EventType  `json:"type"`
	Views    []wireView `json:"views"`
	Revision int64      `json:"revision"`
}
