package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// parsePages parses each page's template with the layout it shares.
func parsePages(prefix string) (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"base":      func() string { return prefix },
		"kindURL":   func(kind string) string { return kindURL(prefix, kind) },
		"objectURL": func(kind, key string) string { return objectURL(prefix, kind, key) },
	}
	layout, err := template.New("layout").Funcs(funcs).ParseFS(web, "web/layout.html", "web/diagram.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"kinds", "kind", "object", "bulk"} {
		t, err := template.Must(layout.Clone()).ParseFS(web, "web/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

func kindURL(prefix, kind string) string { return prefix + "kinds/" + url.PathEscape(kind) }

func objectURL(prefix, kind, key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return kindURL(prefix, kind) + "/objects/" + strings.Join(parts, "/")
}

// page is what every page's layout reads.
type page struct {
	Title string
	Kind  string // the kind the page is about, if any
	// Events is the URL of the page's event stream.
	Events string
	Body   any
}

// render writes the page name with code.
func (c *Console) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		c.fail(w, r, fmt.Errorf("rendering %s: %w", name, err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// phaseCount is how many documents of a kind rest in a phase.
type phaseCount struct {
	Phase string
	Kind  string // the phase's kind: resting, transitional, terminal, fault
	N     int
}

// kindRow is one line of the kinds page.
type kindRow struct {
	Kind    string
	Machine string
	Total   int
	Phases  []phaseCount
	Stuck   int
	Served  bool
	Err     string
}

// revision returns the store's revision of kind now: a watch from it sees
// every change made after the reads that follow.
func (c *Console) revision(ctx context.Context, kind string) (int64, error) {
	res, err := c.store.List(ctx, kind, store.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	return res.Revision, nil
}

// kindView is a driven kind as the pages show it.
type kindView struct {
	Reg     registry.Entry
	Machine *statemachine.Machine[string, string]
	Objects []oncall.View
}

// readKind reads a kind's registration, builds its machine and lists its
// documents.
func (c *Console) readKind(ctx context.Context, reg registry.Entry) (kindView, error) {
	m, err := reg.Build()
	if err != nil {
		return kindView{}, err
	}
	objs, err := c.reader.List(ctx, reg.Kind, store.ListOptions{})
	if err != nil {
		return kindView{}, err
	}
	return kindView{Reg: reg, Machine: m, Objects: objs}, nil
}

// counts returns the number of documents in each of the machine's phases,
// in its order, then those in phases it does not declare.
func counts(m *statemachine.Machine[string, string], objs []oncall.View) []phaseCount {
	var out []phaseCount
	for _, p := range m.Phases() {
		spec, _ := m.Spec(p)
		out = append(out, phaseCount{Phase: p, Kind: spec.Type.String()})
	}
	for _, o := range objs {
		i := slices.IndexFunc(out, func(pc phaseCount) bool { return pc.Phase == o.Phase })
		if i < 0 {
			out = append(out, phaseCount{Phase: o.Phase, Kind: "unknown"})
			i = len(out) - 1
		}
		out[i].N++
	}
	return out
}

func (c *Console) serveKinds(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c.session(w, r)
	regs, err := c.reader.Registrations(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	slices.SortFunc(regs, func(a, b registry.Entry) int { return strings.Compare(a.Kind, b.Kind) })
	rows := make([]kindRow, 0, len(regs))
	now := c.now()
	for _, reg := range regs {
		row := kindRow{Kind: reg.Kind, Machine: reg.Machine.Name}
		kv, err := c.readKind(ctx, reg)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			row.Err = err.Error()
			rows = append(rows, row)
			continue
		}
		row.Total = len(kv.Objects)
		row.Phases = slices.DeleteFunc(counts(kv.Machine, kv.Objects), func(pc phaseCount) bool { return pc.N == 0 })
		for _, o := range kv.Objects {
			if len(o.Stuck(kv.Machine, now)) > 0 {
				row.Stuck++
			}
		}
		if row.Served, err = c.reader.Served(ctx, reg.Kind); err != nil {
			row.Err = err.Error()
		}
		rows = append(rows, row)
	}
	c.render(w, r, http.StatusOK, "kinds", page{Title: "Kinds", Events: c.prefix + "events", Body: rows})
}

// objectRow is a document as a list shows it, and as an event carries it
// to the pages.
type objectRow struct {
	Kind      string   `json:"kind"`
	Key       string   `json:"key"`
	URL       string   `json:"url"`
	State     string   `json:"state"`
	Phase     string   `json:"phase"`
	Age       string   `json:"age"`
	InPhase   string   `json:"inPhase"`
	LastError string   `json:"lastError,omitempty"`
	Paused    string   `json:"paused,omitempty"`
	Stuck     []string `json:"stuck,omitempty"`
	Deleting  bool     `json:"deleting,omitempty"`
}

func (c *Console) row(kind string, m *statemachine.Machine[string, string], o oncall.View, now time.Time) objectRow {
	r := objectRow{
		Kind: kind, Key: o.Meta.Key, URL: objectURL(c.prefix, kind, o.Meta.Key),
		State: o.State, Phase: o.Phase, Age: age(now, o.Meta.CreatedAt), InPhase: age(now, o.Since),
		Deleting: o.Meta.Terminating(),
	}
	switch {
	case o.Operation != nil && o.Operation.LastError != "":
		r.LastError = o.Operation.LastError
	case o.Failure != nil:
		r.LastError = o.Failure.Reason
	}
	if o.Paused != nil {
		r.Paused = cmp.Or(o.Paused.By, "someone")
		if o.Paused.Reason != "" {
			r.Paused += ": " + o.Paused.Reason
		}
	}
	if m != nil {
		r.Stuck = o.Stuck(m, now)
	}
	return r
}

// age writes the time since t as people read it: 42s, 3m, 5h, 2d.
func age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// phaseGroup is the documents of a kind in one phase.
type phaseGroup struct {
	phaseCount
	Rows []objectRow
}

type kindPage struct {
	Kind     string
	Machine  string
	Groups   []phaseGroup
	Total    int
	Served   bool
	Revision int64
	// Empty is the row the page's script fills for a document it learns
	// of from the event stream.
	Empty objectRow
	// Bulk is what the "All matching" form offers.
	Bulk bulkForm
}

func (c *Console) serveKind(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c.session(w, r)
	kind := r.PathValue("kind")
	reg, err := c.reader.Registration(ctx, kind)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	rev, err := c.revision(ctx, kind)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	kv, err := c.readKind(ctx, reg)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p := kindPage{Kind: kind, Machine: reg.Machine.Name, Total: len(kv.Objects), Revision: rev, Bulk: newBulkForm(kv.Machine)}
	if p.Served, err = c.reader.Served(ctx, kind); err != nil {
		c.fail(w, r, err)
		return
	}
	now := c.now()
	for _, pc := range counts(kv.Machine, kv.Objects) {
		p.Groups = append(p.Groups, phaseGroup{phaseCount: pc})
	}
	for _, o := range kv.Objects {
		g := &p.Groups[slices.IndexFunc(p.Groups, func(g phaseGroup) bool { return g.Phase == o.Phase })]
		g.Rows = append(g.Rows, c.row(kind, kv.Machine, o, now))
	}
	events := fmt.Sprintf("%sevents?kind=%s&from=%d", c.prefix, url.QueryEscape(kind), rev)
	c.render(w, r, http.StatusOK, "kind", page{Title: kind, Kind: kind, Events: events, Body: p})
}

// reconcileRow is one of a document's last reconciles.
type reconcileRow struct {
	Start, Triggers, Result, Took, ID string
	Failed                            bool
}

// reconcileRows returns the rows of rs, newest first.
func reconcileRows(rs []manager.Reconcile) []reconcileRow {
	out := make([]reconcileRow, 0, len(rs))
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		result := r.Result
		if r.Error != "" {
			result += ": " + r.Error
		}
		out = append(out, reconcileRow{Start: r.Start.UTC().Format("2006-01-02 15:04:05.000"), Triggers: strings.Join(r.Triggers, ", "),
			Result: result, Took: r.Duration.Round(time.Microsecond).String(), ID: r.ReconcileID, Failed: r.Error != ""})
	}
	return out
}

// historyRow is one entry of a document's history.
type historyRow struct {
	Time    string
	Type    string
	Details string
}

type objectPage struct {
	objectRow
	Machine    string
	Diagram    diagram
	Revision   int64
	UID        string
	Generation int64
	Finalizers []string
	Owners     []store.OwnerRef
	Labels     map[string]string
	Operation  *statemachine.Operation[string]
	Failure    *statemachine.Failure[string]
	Refused    *statemachine.Refusal[string]
	Conditions []statemachine.Condition
	PhaseSince time.Time // when the document's phase began: conditions observed before are stale
	Commands   []statemachine.Command
	History    []historyRow
	// Reconciles are the last reconciles, newest first; ShowReconciles
	// says whether the console knows them (Config.Reconciles).
	Reconciles     []reconcileRow
	ShowReconciles bool
	Spec           string
	Status         string
	// What the action forms offer.
	ReadOnly   bool
	Token      string
	Steps      []string
	Phases     []string // the phases a move may go to
	Requests   []string
	KindFinals []string // the kind's finalizers the document still has
	Message    string
}

func (c *Console) serveObject(w http.ResponseWriter, r *http.Request) {
	// The page an action redirects to says it was done; only the names
	// of actions are shown, so a link cannot put words in the console's
	// mouth.
	var message string
	if a := ActionName(r.URL.Query().Get("done")); a.known() {
		message = "Done: " + string(a) + "."
	}
	c.showObject(w, r, http.StatusOK, message)
}

// showObject renders a document's page with code and a message.
func (c *Console) showObject(w http.ResponseWriter, r *http.Request, code int, message string) {
	ctx := r.Context()
	token := c.session(w, r)
	kind, key := r.PathValue("kind"), r.PathValue("key")
	reg, err := c.reader.Registration(ctx, kind)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	m, err := reg.Build()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	rev, err := c.revision(ctx, kind)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	o, err := c.reader.Get(ctx, kind, key)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	hist, err := c.reader.History(ctx, kind, key)
	if err != nil && !errors.Is(err, store.ErrUnknownKind) {
		c.fail(w, r, err)
		return
	}
	now := c.now()
	p := objectPage{
		objectRow: c.row(kind, m, o, now),
		Machine:   reg.Machine.Name, Diagram: layout(m, o.Phase), Revision: rev,
		UID: o.Meta.UID, Generation: o.Meta.Generation, Finalizers: o.Meta.Finalizers, Owners: o.Meta.Owners, Labels: o.Meta.Labels,
		Operation: o.Operation, Failure: o.Failure, Refused: o.Refused, Conditions: o.Conditions, PhaseSince: o.Since, Commands: o.Commands,
		Spec: indent(o.Spec), Status: indent(o.Status),
		ReadOnly: c.authorize == nil, Token: token, Requests: m.Requests(), Message: message,
	}
	if c.recs != nil {
		p.ShowReconciles, p.Reconciles = true, reconcileRows(c.recs(kind, key))
	}
	for i := len(hist) - 1; i >= 0; i-- { // newest first
		e := hist[i]
		head := e.Time.UTC().Format(time.RFC3339Nano) + " " + string(e.Type)
		p.History = append(p.History, historyRow{
			Time: e.Time.UTC().Format("2006-01-02 15:04:05.000"), Type: string(e.Type),
			Details: strings.TrimSpace(strings.TrimPrefix(e.String(), head)),
		})
	}
	if o.Operation != nil {
		spec, _ := m.Spec(o.Operation.Phase)
		p.Steps = spec.Steps
	} else if o.Failure != nil {
		spec, _ := m.Spec(o.Failure.Operation.Phase)
		p.Steps = spec.Steps
	}
	for _, ph := range m.Phases() {
		if spec, _ := m.Spec(ph); spec.Type != statemachine.Transitional {
			p.Phases = append(p.Phases, ph)
		}
	}
	for _, f := range reg.Finalizers {
		if o.Meta.HasFinalizer(f) {
			p.KindFinals = append(p.KindFinals, f)
		}
	}
	if len(reg.Finalizers) == 0 {
		p.KindFinals = o.Meta.Finalizers
	}
	events := fmt.Sprintf("%sevents?kind=%s&key=%s&from=%d", c.prefix, url.QueryEscape(kind), url.QueryEscape(key), rev)
	c.render(w, r, code, "object", page{Title: kind + " " + key, Kind: kind, Events: events, Body: p})
}

// indent returns JSON indented for people, or the bytes as they are when
// they are not JSON.
func indent(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return string(b)
	}
	return buf.String()
}
