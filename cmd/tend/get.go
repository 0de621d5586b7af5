package main

import (
	"context"
	"encoding/json"
	"errors"
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
	rev, err := revision(ctx, c.backend, kind)
	if err != nil {
		return err
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
	w := &objectWriter{out: g.out, format: g.output, now: g.now, stream: g.watch}
	if err := w.write(objs); err != nil {
		return err
	}
	if !g.watch {
		return nil
	}
	key := ""
	if len(args) == 2 {
		key = args[1]
	}
	return g.follow(ctx, c, kind, key, sel, rev, w)
}

// match reports whether obj passes the filters.
func (g *getOptions) match(obj oncall.View, sel store.Selector) bool {
	return (len(g.phases) == 0 || slices.Contains(g.phases, obj.Phase)) && sel.Matches(obj.Meta.Labels)
}

// revision returns the kind's current revision, to watch from.
func revision(ctx context.Context, b store.Backend, kind string) (int64, error) {
	res, err := b.List(ctx, kind, store.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	return res.Revision, nil
}

// follow writes the changes of the kind's documents (of the one document
// key, when set) after revision rev, until ctx ends.
func (g *getOptions) follow(ctx context.Context, c *conn, kind, key string, sel store.Selector, rev int64, w *objectWriter) error {
	for {
		watch, err := c.backend.Watch(ctx, kind, rev)
		if err != nil {
			return err
		}
		err = func() error {
			defer watch.Close()
			for {
				ev, err := watch.Next(ctx)
				if err != nil {
					return err
				}
				rev = ev.Revision
				doc := ev.Document
				if key != "" && doc.Meta.Key != key {
					continue
				}
				if ev.Type == store.Deleted {
					if err := w.deleted(oncall.View{Meta: doc.Meta}); err != nil {
						return err
					}
					continue
				}
				obj, err := oncall.Decode(doc)
				if err != nil {
					return err
				}
				if g.match(obj, sel) {
					if err := w.write([]oncall.View{obj}); err != nil {
						return err
					}
				}
			}
		}()
		switch {
		case ctx.Err() != nil:
			return nil // interrupted: the normal end of --watch
		case errors.Is(err, store.ErrCompacted), errors.Is(err, store.ErrWatchLagged):
			// Start again from now: the documents' current state is
			// written again, so nothing is missed.
			if rev, err = revision(ctx, c.backend, kind); err != nil {
				return err
			}
			objs, err := c.client.List(ctx, kind, store.ListOptions{Selector: sel})
			if err != nil {
				return err
			}
			objs = slices.DeleteFunc(objs, func(o oncall.View) bool {
				return !g.match(o, sel) || key != "" && o.Meta.Key != key
			})
			if err := w.write(objs); err != nil {
				return err
			}
		default:
			return err
		}
	}
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
