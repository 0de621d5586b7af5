package console

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// bulkRows is how many of the documents a bulk action selects its preview
// shows.
const bulkRows = 20

// maxBulkForm bounds the body of a bulk action's form, which carries the
// preview: the key and revision of every document selected.
const maxBulkForm = 16 << 20

// bulkActions are the actions the kind page offers on every matching
// document.
var bulkActions = []ActionName{ActionPause, ActionResume, ActionRetry, ActionSkip, ActionMove, ActionRequest}

// bulkPage is the preview of a bulk action, then its outcome.
type bulkPage struct {
	Kind     string
	Action   Action
	Query    url.Values // the selection and the action, carried to the run
	Matching string     // the selection, for people
	Count    int
	Rows     []objectRow
	More     int
	Preview  string // the previewed documents' revisions, as JSON
	ReadOnly bool
	Token    string
	// Set once run:
	Done     bool
	Outcomes []bulkOutcome
	Refused  int
	Changed  []string
	Gone     []string
	Added    []string
}

type bulkOutcome struct {
	Key, URL, Command, Error string
}

// bulkForm is what the kind page's "All matching" form offers: the
// machine's phases, steps and requests.
type bulkForm struct {
	Actions  []ActionName
	Phases   []string // every phase, to select by
	Resting  []string // phases a move goes to
	Steps    []string
	Requests []string
}

func newBulkForm(m *statemachine.Machine[string, string]) bulkForm {
	f := bulkForm{Actions: bulkActions, Phases: m.Phases(), Steps: m.Steps(), Requests: m.Requests()}
	for _, ph := range m.Phases() {
		if spec, _ := m.Spec(ph); spec.Type != statemachine.Transitional && spec.Type != statemachine.Fault {
			f.Resting = append(f.Resting, ph)
		}
	}
	return f
}

// bulkOf reads a bulk action's selection and action from form values:
// selector, phase, stuck (nothing selects every document), action and its
// arguments.
func bulkOf(kind string, v url.Values) (oncall.Selection, Action, url.Values, error) {
	sel := oncall.Selection{Kind: kind, Stuck: v.Get("stuck") != ""}
	if p := v.Get("phase"); p != "" {
		sel.Phases = []string{p}
	}
	var err error
	if sel.Selector, err = store.ParseSelector(v.Get("selector")); err != nil {
		return sel, Action{}, nil, err
	}
	sel.All = sel.Selector.Empty() && len(sel.Phases) == 0 && !sel.Stuck
	a := Action{Name: ActionName(v.Get("action")), Kind: kind, Bulk: true, Reason: v.Get("reason")}
	switch a.Name {
	case ActionSkip:
		a.Step = v.Get("step")
	case ActionMove:
		a.Phase = v.Get("to")
	case ActionRequest:
		a.Request = v.Get("request")
	case ActionPause, ActionResume, ActionRetry:
	default:
		return sel, a, nil, fmt.Errorf("%w: no bulk action is named %q", oncall.ErrInvalidAction, a.Name)
	}
	q := url.Values{}
	for _, name := range []string{"selector", "phase", "stuck", "action", "reason", "step", "to", "request"} {
		if v.Get(name) != "" {
			q.Set(name, v.Get(name))
		}
	}
	return sel, a, q, nil
}

// serveBulkPreview shows what a bulk action would act on, with the form
// that runs it.
func (c *Console) serveBulkPreview(w http.ResponseWriter, r *http.Request) {
	token := c.session(w, r)
	kind := r.PathValue("kind")
	sel, a, q, err := bulkOf(kind, r.URL.Query())
	if err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusBadRequest)
		return
	}
	views, err := c.reader.Select(r.Context(), sel)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	m, err := c.reader.Machine(r.Context(), kind)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	preview, _ := json.Marshal(oncall.PreviewOf(views))
	p := bulkPage{Kind: kind, Action: a, Query: q, Matching: matching(sel), Count: len(views), Preview: string(preview),
		ReadOnly: c.authorize == nil, Token: token, More: max(0, len(views)-bulkRows)}
	now := c.now()
	for _, v := range views[:min(len(views), bulkRows)] {
		p.Rows = append(p.Rows, c.row(kind, m, v, now))
	}
	c.render(w, r, http.StatusOK, "bulk", page{Title: kind + ": " + string(a.Name) + " all matching", Kind: kind, Body: p})
}

// matching describes a selection for people.
func matching(sel oncall.Selection) string {
	if sel.All {
		return "every document"
	}
	var s []string
	if !sel.Selector.Empty() {
		s = append(s, "labels "+sel.Selector.String())
	}
	if len(sel.Phases) > 0 {
		s = append(s, "phase "+sel.Phases[0])
	}
	if sel.Stuck {
		s = append(s, "stuck")
	}
	return fmt.Sprint(s)
}

// serveBulk runs a bulk action on the documents of its preview that its
// selection still selects, and shows each one's outcome.
func (c *Console) serveBulk(w http.ResponseWriter, r *http.Request) {
	if !c.postedForm(w, r, maxBulkForm) {
		return
	}
	kind := r.PathValue("kind")
	sel, a, q, err := bulkOf(kind, r.PostForm)
	if err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusBadRequest)
		return
	}
	var preview oncall.Preview
	if err := json.Unmarshal([]byte(r.PostFormValue("preview")), &preview); err != nil {
		http.Error(w, "console: the form's preview: "+err.Error(), http.StatusBadRequest)
		return
	}
	var rate oncall.Rate
	if s := r.PostFormValue("rate"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			http.Error(w, fmt.Sprintf("console: rate %q: want a number of documents a second", s), http.StatusBadRequest)
			return
		}
		rate = oncall.Rate{N: n, Per: time.Second}
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
	res, err := client.Bulk(r.Context(), oncall.Bulk{Selection: sel, Rate: rate, Parallel: 4, Preview: &preview, Action: oncall.Action{
		Name: string(a.Name), Reason: a.Reason, Step: a.Step, Phase: a.Phase, Request: a.Request,
	}})
	if err != nil && !errors.Is(err, oncall.ErrInvalidAction) {
		c.fail(w, r, err)
		return
	}
	p := bulkPage{Kind: kind, Action: a, Query: q, Matching: matching(sel), Count: len(preview.Revisions), Done: true,
		Refused: res.Refused(), Changed: res.Changed, Gone: res.Gone, Added: res.Added, ReadOnly: true}
	if err != nil {
		p.Outcomes = []bulkOutcome{{Error: err.Error()}}
	}
	for _, o := range res.Outcomes {
		bo := bulkOutcome{Key: o.Key, URL: objectURL(c.prefix, kind, o.Key), Command: o.Command}
		if o.Err != nil {
			bo.Error = o.Err.Error()
		}
		p.Outcomes = append(p.Outcomes, bo)
	}
	c.render(w, r, http.StatusOK, "bulk", page{Title: kind + ": " + string(a.Name) + " all matching", Kind: kind, Body: p})
}
