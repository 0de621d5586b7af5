package console

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/tendhq/tend/oncall"
)

// ActionName names what an [Action] does.
type ActionName string

// The actions of the console; each is carried out by the oncall.Client
// method of the same name.
const (
	ActionPause           ActionName = "pause"
	ActionResume          ActionName = "resume"
	ActionRetry           ActionName = "retry"
	ActionSkip            ActionName = "skip"
	ActionMove            ActionName = "move"
	ActionRequest         ActionName = "request"
	ActionRemoveFinalizer ActionName = "remove-finalizer"
)

// known reports whether n is one of the console's actions.
func (n ActionName) known() bool {
	switch n {
	case ActionPause, ActionResume, ActionRetry, ActionSkip, ActionMove, ActionRequest, ActionRemoveFinalizer:
		return true
	}
	return false
}

// Action is what an operator asks the console to do to one document, as
// [Config.Authorize] is asked about it.
type Action struct {
	Name ActionName
	Kind string
	Key  string
	// Reason is the operator's reason (pause).
	Reason string
	// Step is the step to skip, Phase the phase to move to, Request the
	// request to serve, Finalizer the finalizer to remove.
	Step      string
	Phase     string
	Request   string
	Finalizer string
	// Force removes a finalizer even while a controller serves the kind.
	Force bool
	// Bulk reports that the action is asked of every document of Kind
	// that a selection selects, from the kind's page (Key is empty).
	Bulk bool
}

// Errors an action is refused with; the answer is 403 Forbidden.
var (
	// ErrReadOnly: the console has no [Config.Authorize].
	ErrReadOnly = errors.New("console: read-only: no action is authorized")
	// ErrBadToken: the form's session token is missing or does not match
	// the session cookie (a form from another site, or from before the
	// console restarted).
	ErrBadToken = errors.New("console: missing or invalid session token: load the page again")
)

// sessionCookie names the cookie the session tokens are bound to.
const sessionCookie = "tend_console_session"

// minSession is the length of a session cookie's value: rand.Text's, 128
// random bits. A shorter value is not a session of the console.
const minSession = 26

// session returns the token of the request's session, starting one (a
// cookie holding a random value) when it has none.
func (c *Console) session(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(sessionCookie); err == nil && len(ck.Value) >= minSession {
		return c.token(ck.Value)
	}
	id := rand.Text()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: c.prefix,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return c.token(id)
}

// token derives a session's token from its cookie's value.
func (c *Console) token(session string) string {
	mac := hmac.New(sha256.New, c.key)
	mac.Write([]byte("tend console session\x00"))
	mac.Write([]byte(session))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// checkToken reports whether r carries its session's token.
func (c *Console) checkToken(r *http.Request) bool {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || len(ck.Value) < minSession {
		return false
	}
	got := r.PostFormValue("token")
	return got != "" && hmac.Equal([]byte(got), []byte(c.token(ck.Value)))
}

// postedForm reads the form of an action posted to r, at most limit
// bytes, and reports whether the action may go on: the console is not
// read-only, the request comes from the console's own site and carries
// its session's token. Otherwise it answers and returns false.
func (c *Console) postedForm(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if c.authorize == nil {
		http.Error(w, ErrReadOnly.Error(), http.StatusForbidden)
		return false
	}
	if err := c.origin.Check(r); err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusForbidden)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "console: reading the form: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if !c.checkToken(r) {
		http.Error(w, ErrBadToken.Error(), http.StatusForbidden)
		return false
	}
	return true
}

// maxForm bounds the body of an action's form.
const maxForm = 64 << 10

func (c *Console) serveAction(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !c.postedForm(w, r, maxForm) {
		return
	}
	a := Action{
		Name: ActionName(r.PostFormValue("action")), Kind: r.PathValue("kind"), Key: r.PathValue("key"),
		Reason: r.PostFormValue("reason"), Step: r.PostFormValue("step"), Phase: r.PostFormValue("phase"),
		Request: r.PostFormValue("request"), Finalizer: r.PostFormValue("finalizer"), Force: r.PostFormValue("force") != "",
	}
	if !a.Name.known() {
		http.Error(w, fmt.Sprintf("console: unknown action %q", a.Name), http.StatusBadRequest)
		return
	}
	if err := c.authorize(r, a); err != nil {
		http.Error(w, "console: "+string(a.Name)+" refused: "+err.Error(), http.StatusForbidden)
		return
	}
	actor := "console"
	if c.actor != nil {
		actor = cmp.Or(c.actor(r), actor)
	}
	client, err := oncall.New(c.store, oncall.Config{Actor: actor})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	done := string(a.Name)
	switch a.Name {
	case ActionPause:
		err = client.Pause(ctx, a.Kind, a.Key, a.Reason)
	case ActionResume:
		err = client.Resume(ctx, a.Kind, a.Key)
	case ActionRetry:
		_, err = client.Retry(ctx, a.Kind, a.Key)
	case ActionSkip:
		_, err = client.Skip(ctx, a.Kind, a.Key, a.Step)
	case ActionMove:
		_, err = client.Move(ctx, a.Kind, a.Key, a.Phase)
	case ActionRequest:
		_, err = client.Request(ctx, a.Kind, a.Key, a.Request)
	case ActionRemoveFinalizer:
		err = client.RemoveFinalizer(ctx, a.Kind, a.Key, a.Finalizer, a.Force)
	}
	switch {
	case errors.Is(err, oncall.ErrInvalidAction):
		c.showObject(w, r, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, oncall.ErrServed):
		c.showObject(w, r, http.StatusConflict, err.Error())
		return
	case err != nil:
		c.fail(w, r, err)
		return
	}
	// Post/redirect/get: reloading the page does not act again.
	http.Redirect(w, r, objectURL(c.prefix, a.Kind, a.Key)+"?done="+url.QueryEscape(done), http.StatusSeeOther)
}
