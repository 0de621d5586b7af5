package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/store"
)

type getOptions struct {
	*options
	output   string
	phases   []string
	selector string
	watch    bool
}

func newGet(o *options) *cobra.Command {
	g := &getOptions{options: o}
	cmd := &cobra.Command{
		Use:   "get [KIND [KEY]]",
		Short: "List the kinds, a kind's documents, or one document",
		Long: `get lists the registered kinds with their documents counted by phase; with
KIND, the kind's documents with their State, Phase, age and last error; with
KIND and KEY, that document.

-o json and -o yaml write the documents as stored (meta, spec, status).
--watch writes the documents, then each change as it happens, until
interrupted.`,
		Example: `  tend get
  tend get Gateway --phase Fault
  tend get Gateway -l team=a -o json
  tend get Gateway team-a/gw-1 --watch`,
		Args:              cobra.MaximumNArgs(2),
		ValidArgsFunction: o.completeKindKey,
		RunE:              runE(g.run),
	}
	f := cmd.Flags()
	f.StringVarP(&g.output, "output", "o", formatTable, "output format: table, json or yaml")
	f.StringSliceVar(&g.phases, "phase", nil, "only documents in these phases (repeat or separate with commas)")
	f.StringVarP(&g.selector, "selector", "l", "", "only documents whose labels match (team=a,tier in (1,2),!legacy)")
	f.BoolVarP(&g.watch, "watch", "w", false, "after listing, write each change until interrupted")
	return cmd
}

func (g *getOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkFormat(g.output); err != nil {
		return err
	}
	sel, err := store.ParseSelector(g.selector)
	if err != nil {
		return usagef("-l %q: %v", g.selector, err)
	}
	if len(args) == 0 && (g.watch || len(g.phases) > 0 || g.selector != "") {
		return usagef("--watch, --phase and -l need a KIND")
	}
	ctx := cmd.Context()
	c, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	if len(args) == 0 {
		return g.kinds(ctx, c)
	}
	kind := args[0]
	if _, _, err := c.registration(kind); err != nil {
		return err
	}
	if g.watch && !c.shared {
		return usagef("--watch needs a store the controllers share: a memory snapshot does not change under tend")
	}
	w := &objectWriter{out: g.out, format: g.output, now: g.now, stream: g.watch}
	if g.watch {
		key := ""
		if len(args) == 2 {
			key = args[1]
		}
		return g.follow(ctx, c, oncall.Selection{Kind: kind, Key: key, Selector: sel, Phases: g.phases, All: true}, w)
	}
	var objs []oncall.View
	if len(args) == 2 {
		obj, err := c.client.Get(ctx, kind, args[1])
		if err != nil {
			return err
		}
		objs = []oncall.View{obj}
	} else if objs, err = c.client.List(ctx, kind, store.ListOptions{Selector: sel}); err != nil {
		return err
	}
	objs = slices.DeleteFunc(objs, func(o oncall.View) bool { return !g.match(o, sel) })
	return w.write(objs)
}

// match reports whether obj passes the filters.
func (g *getOptions) match(obj oncall.View, sel store.Selector) bool {
	return (len(g.phases) == 0 || slices.Contains(g.phases, obj.Phase)) && sel.Matches(obj.Meta.Labels)
}

// follow writes the documents sel selects, then each change, until ctx
// ends. When the watch has to start over, the documents are written again,
// so that nothing is missed.
func (g *getOptions) follow(ctx context.Context, c *conn, sel oncall.Selection, w *objectWriter) error {
	first := true
	err := c.client.Watch(ctx, sel, func(ev oncall.Event) error {
		switch ev.Type {
		case oncall.EventDelete:
			return w.deleted(ev.Views[0])
		case oncall.EventList:
			if first && sel.Key != "" && len(ev.Views) == 0 {
				return fmt.Errorf("%s %q: %w", sel.Kind, sel.Key, store.ErrNotFound)
			}
			first = false
		}
		return w.write(ev.Views)
	})
	if ctx.Err() != nil {
		return nil // interrupted: the normal end of --watch
	}
	return err
}

// kinds writes the registered kinds with their documents counted by phase.
func (g *getOptions) kinds(ctx context.Context, c *conn) error {
	type kindSummary struct {
		Kind    string         `json:"kind"`
		Machine string         `json:"machine"`
		Served  bool           `json:"served"`
		Objects int            `json:"objects"`
		Phases  map[string]int `json:"phases"`
		order   []string
	}
	var out []kindSummary
	for _, kind := range c.kinds {
		_, m, err := c.registration(kind)
		if err != nil {
			return err
		}
		objs, err := c.client.List(ctx, kind, store.ListOptions{})
		if err != nil {
			return err
		}
		served, err := c.client.Served(ctx, kind)
		if err != nil {
			return err
		}
		s := kindSummary{Kind: kind, Machine: m.Name(), Served: served, Objects: len(objs), Phases: map[string]int{}, order: m.Phases()}
		for _, o := range objs {
			if s.Phases[o.Phase] == 0 && !slices.Contains(s.order, o.Phase) {
				s.order = append(s.order, o.Phase)
			}
			s.Phases[o.Phase]++
		}
		out = append(out, s)
	}
	if g.output != formatTable {
		if out == nil {
			out = []kindSummary{}
		}
		return writeData(g.out, g.output, out)
	}
	t := newTable(g.out, "KIND", "MACHINE", "SERVED", "OBJECTS", "PHASES")
	for _, s := range out {
		var phases []string
		for _, p := range s.order {
			if n := s.Phases[p]; n > 0 {
				phases = append(phases, fmt.Sprintf("%s=%d", p, n))
			}
		}
		t.row(s.Kind, s.Machine, yesNo(s.Served), fmt.Sprint(s.Objects), strings.Join(phases, " "))
	}
	return t.flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// document is a document as -o json and -o yaml write it: as stored.
type document struct {
	Meta   store.Meta      `json:"meta"`
	Spec   json.RawMessage `json:"spec,omitempty"`
	Status json.RawMessage `json:"status,omitempty"`
}

// documentOf returns obj as stored. Bytes that are not JSON are written as
// a JSON string.
func documentOf(obj oncall.View) document {
	raw := func(b []byte) json.RawMessage {
		if len(b) == 0 || json.Valid(b) {
			return b
		}
		s, _ := json.Marshal(string(b))
		return s
	}
	return document{Meta: obj.Meta, Spec: raw(obj.Spec), Status: raw(obj.Status)}
}

// objectWriter writes documents as a table or as data.
type objectWriter struct {
	out    io.Writer
	format string
	now    func() time.Time
	// stream: a document at a time (--watch): tables have one header, and
	// data is written one compact JSON document a line (or YAML
	// documents separated by ---).
	stream  bool
	started bool
}

func (w *objectWriter) write(objs []oncall.View) error {
	if w.format == formatTable {
		t := newTable(w.out)
		if !w.started {
			t.row("KEY", "STATE", "PHASE", "AGE", "ERROR")
		}
		for _, o := range objs {
			t.row(o.Meta.Key, o.State, phaseCell(o), age(w.now(), o.Meta.CreatedAt), oneLine(lastError(o), 80))
		}
		w.started = true
		return t.flush()
	}
	if !w.stream {
		if len(objs) == 1 {
			return writeData(w.out, w.format, documentOf(objs[0]))
		}
		items := make([]document, len(objs))
		for i, o := range objs {
			items[i] = documentOf(o)
		}
		return writeData(w.out, w.format, struct {
			Items []document `json:"items"`
		}{items})
	}
	for _, o := range objs {
		if err := w.streamData(documentOf(o)); err != nil {
			return err
		}
	}
	return nil
}

// streamData writes one document of a stream.
func (w *objectWriter) streamData(v any) error {
	if w.format == formatYAML {
		if _, err := io.WriteString(w.out, "---\n"); err != nil {
			return err
		}
		return writeData(w.out, w.format, v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w.out, "%s\n", data)
	return err
}

// deleted writes that a document was deleted.
func (w *objectWriter) deleted(o oncall.View) error {
	if w.format == formatTable {
		t := newTable(w.out)
		t.row(o.Meta.Key, "", "<deleted>", age(w.now(), o.Meta.CreatedAt), "")
		return t.flush()
	}
	return w.streamData(struct {
		Deleted store.Meta `json:"deleted"`
	}{o.Meta})
}

// phaseCell is the PHASE column: the phase, and whether an operator holds
// the document.
func phaseCell(o oncall.View) string {
	p := o.Phase
	if o.Paused != nil {
		p += " (paused)"
	}
	if o.Meta.Terminating() {
		p += " (deleting)"
	}
	return p
}

// lastError is the last error of a document: its failing step's, its
// failure's, or its refused intent's.
func lastError(o oncall.View) string {
	switch {
	case o.Operation != nil && o.Operation.LastError != "":
		return o.Operation.LastError
	case o.Failure != nil:
		return o.Failure.Reason
	case o.Refused != nil:
		return "intent " + o.Refused.Intent + " refused: " + o.Refused.Reason
	}
	return ""
}
