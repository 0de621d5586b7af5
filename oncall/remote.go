package oncall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// RemoteConfig configures a [Remote].
type RemoteConfig struct {
	// URL is where the [Server] is mounted, for example
	// https://ops.example.com/oncall/. Required.
	URL string
	// Token is the server's bearer token ([ServerConfig.Token]).
	Token string
	// Actor names who acts, sent in the [ActorHeader] header; the server
	// decides whether to trust it ([ServerConfig.Actor]).
	Actor string
	// HTTP is the client requests are sent with. Nil means
	// http.DefaultClient.
	HTTP *http.Client
}

// Remote has the [Client]'s methods, carried out by a [Server] over HTTP.
// The errors it returns match the same sentinels the Client's do
// (store.ErrNotFound, registry.ErrUnregistered, ErrInvalidAction,
// ErrServed…), plus ErrUnauthorized and ErrForbidden. It is safe for
// concurrent use.
type Remote struct {
	base  *url.URL
	token string
	actor string
	http  *http.Client
}

// NewRemote returns a client of the server at cfg.URL.
func NewRemote(cfg RemoteConfig) (*Remote, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: URL %q is not an http or https URL", ErrInvalidConfig, cfg.URL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	r := &Remote{base: u, token: cfg.Token, actor: cfg.Actor, http: cfg.HTTP}
	if r.http == nil {
		r.http = http.DefaultClient
	}
	return r, nil
}

// Registrations: see [Client.Registrations].
func (r *Remote) Registrations(ctx context.Context) ([]registry.Entry, error) {
	var regs []registry.Entry
	return regs, r.get(ctx, "registrations", nil, &regs)
}

// Registration: see [Client.Registration].
func (r *Remote) Registration(ctx context.Context, kind string) (registry.Entry, error) {
	var reg registry.Entry
	return reg, r.get(ctx, "registrations/"+url.PathEscape(kind), nil, &reg)
}

// Machine: see [Client.Machine].
func (r *Remote) Machine(ctx context.Context, kind string) (*statemachine.Machine[string, string], error) {
	reg, err := r.Registration(ctx, kind)
	if err != nil {
		return nil, err
	}
	return reg.Build()
}

// Served: see [Client.Served].
func (r *Remote) Served(ctx context.Context, kind string) (bool, error) {
	var served bool
	return served, r.get(ctx, kindPath(kind, "served"), nil, &served)
}

// Get: see [Client.Get].
func (r *Remote) Get(ctx context.Context, kind, key string) (View, error) {
	var wv wireView
	if err := r.get(ctx, kindPath(kind, "document"), url.Values{"key": {key}}, &wv); err != nil {
		return View{}, err
	}
	return wv.view()
}

// List: see [Client.List]. Its Limit and Continue are not used: every
// document selected is returned.
func (r *Remote) List(ctx context.Context, kind string, opts store.ListOptions) ([]View, error) {
	return r.Select(ctx, Selection{Kind: kind, Selector: opts.Selector, All: true})
}

// Select: see [Client.Select].
func (r *Remote) Select(ctx context.Context, sel Selection) ([]View, error) {
	var wvs []wireView
	if err := r.get(ctx, kindPath(sel.Kind, "documents"), sel.query(), &wvs); err != nil {
		return nil, err
	}
	return viewsOf(wvs)
}

// History: see [Client.History].
func (r *Remote) History(ctx context.Context, kind, key string) ([]history.Entry, error) {
	var entries []history.Entry
	return entries, r.get(ctx, kindPath(kind, "history"), url.Values{"key": {key}}, &entries)
}

// Wait: see [Client.Wait]. The server waits, within one request.
func (r *Remote) Wait(ctx context.Context, kind, key, id string) (history.Entry, error) {
	var e history.Entry
	return e, r.get(ctx, kindPath(kind, "wait"), url.Values{"key": {key}, "command": {id}}, &e)
}

// Await: see [Client.Await]. The server waits, within one request; a
// document held in Fault or refused is reported by an error matching
// statemachine.ErrHeldInFault or statemachine.ErrIntentRefused, with the
// server's text.
func (r *Remote) Await(ctx context.Context, kind, key string, generation int64) (View, error) {
	q := url.Values{"key": {key}}
	if generation != 0 {
		q.Set("generation", strconv.FormatInt(generation, 10))
	}
	var wv wireView
	if err := r.get(ctx, kindPath(kind, "await"), q, &wv); err != nil {
		return View{}, err
	}
	return wv.view()
}

// SetIntent: see [Client.SetIntent]. The server's authorizer sees it as an
// action named [ActionSetIntent].
func (r *Remote) SetIntent(ctx context.Context, kind, key, field, intent string) error {
	var done struct{}
	return r.post(ctx, kindPath(kind, "intent"), intentRequest{Key: key, Field: field, Intent: intent}, &done)
}

// DiffMachine: see [Client.DiffMachine].
func (r *Remote) DiffMachine(ctx context.Context, kind string, next statemachine.Descriptor) (MachineDiff, error) {
	var diff MachineDiff
	return diff, r.post(ctx, kindPath(kind, "diff"), next, &diff)
}

// Watch: see [Client.Watch].
func (r *Remote) Watch(ctx context.Context, sel Selection, each func(Event) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := r.do(ctx, http.MethodGet, kindPath(sel.Kind, "watch"), sel.query(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var we wireEvent
		if err := dec.Decode(&we); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("oncall: watching %s: %w", sel.Kind, err)
		}
		views, err := viewsOf(we.Views)
		if err != nil {
			return err
		}
		if err := each(Event{Type: we.Type, Views: views, Revision: we.Revision}); err != nil {
			return err
		}
	}
}

// Apply: see [Client.Apply].
func (r *Remote) Apply(ctx context.Context, kind, key string, a Action) (statemachine.Command, error) {
	if err := a.Check(); err != nil {
		return statemachine.Command{}, err
	}
	var rep actionReply
	if err := r.post(ctx, kindPath(kind, "actions"), actionRequest{Key: key, Action: a}, &rep); err != nil {
		return statemachine.Command{}, err
	}
	if rep.Command == nil {
		return statemachine.Command{}, nil
	}
	return *rep.Command, nil
}

// Pause: see [Client.Pause].
func (r *Remote) Pause(ctx context.Context, kind, key, reason string) error {
	_, err := r.Apply(ctx, kind, key, Action{Name: ActionPause, Reason: reason})
	return err
}

// Resume: see [Client.Resume].
func (r *Remote) Resume(ctx context.Context, kind, key string) error {
	_, err := r.Apply(ctx, kind, key, Action{Name: ActionResume})
	return err
}

// Retry: see [Client.Retry].
func (r *Remote) Retry(ctx context.Context, kind, key string) (statemachine.Command, error) {
	return r.Apply(ctx, kind, key, Action{Name: ActionRetry})
}

// Skip: see [Client.Skip].
func (r *Remote) Skip(ctx context.Context, kind, key, step string) (statemachine.Command, error) {
	return r.Apply(ctx, kind, key, Action{Name: ActionSkip, Step: step})
}

// Move: see [Client.Move].
func (r *Remote) Move(ctx context.Context, kind, key, phase string) (statemachine.Command, error) {
	return r.Apply(ctx, kind, key, Action{Name: ActionMove, Phase: phase})
}

// Request: see [Client.Request].
func (r *Remote) Request(ctx context.Context, kind, key, name string) (statemachine.Command, error) {
	return r.Apply(ctx, kind, key, Action{Name: ActionRequest, Request: name})
}

// RemoveFinalizer: see [Client.RemoveFinalizer].
func (r *Remote) RemoveFinalizer(ctx context.Context, kind, key, finalizer string, force bool) error {
	_, err := r.Apply(ctx, kind, key, Action{Name: ActionRemoveFinalizer, Finalizer: finalizer, Force: force})
	return err
}

// Bulk: see [Client.Bulk]. The server carries it out within one request.
func (r *Remote) Bulk(ctx context.Context, b Bulk) (BulkResult, error) {
	if err := b.Action.Check(); err != nil {
		return BulkResult{}, err
	}
	if err := b.Selection.Check(); err != nil {
		return BulkResult{}, err
	}
	var res BulkResult
	return res, r.post(ctx, kindPath(b.Selection.Kind, "bulk"), b, &res)
}

func kindPath(kind, what string) string { return "kinds/" + url.PathEscape(kind) + "/" + what }

func viewsOf(wvs []wireView) ([]View, error) {
	out := make([]View, len(wvs))
	for i, wv := range wvs {
		var err error
		if out[i], err = wv.view(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *Remote) get(ctx context.Context, path string, q url.Values, out any) error {
	resp, err := r.do(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeReply(resp, out)
}

func (r *Remote) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := r.do(ctx, http.MethodPost, path, nil, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeReply(resp, out)
}

// do sends a request and returns its answer when it succeeded, or the
// error the server answered with.
func (r *Remote) do(ctx context.Context, method, path string, q url.Values, body []byte) (*http.Response, error) {
	u := r.base.JoinPath(path)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.actor != "" {
		req.Header.Set(ActorHeader, r.actor)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oncall: %s %s: %w", method, r.base.Redacted(), err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var we wireError
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&we); err != nil || we.Code == "" {
		return nil, fmt.Errorf("oncall: %s %s: %s", method, u.Redacted(), resp.Status)
	}
	return nil, decodeError(we)
}

func decodeReply(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("oncall: reading the answer of %s: %w", resp.Request.URL.Redacted(), err)
	}
	return nil
}
