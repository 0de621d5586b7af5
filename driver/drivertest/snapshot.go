package drivertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// CheckCarried returns an error matching statemachine.ErrStranded, a
// *statemachine.StrandedError, listing the documents of a snapshot (see
// [ParseSnapshot]) that machine m cannot carry on, as
// [driver.CheckDocuments] judges them; nil when m carries them all. A team
// runs it in CI over a snapshot of production's documents before it
// deploys a new version of a machine:
//
//	docs, err := drivertest.ReadSnapshot("testdata/gateways.json")
//	…
//	if err := drivertest.CheckCarried[GatewaySpec, GatewayStatus](machine, docs); err != nil {
//		t.Fatal(err)
//	}
//
// Spec and Status are decoded from JSON, as the tend command writes them.
func CheckCarried[Spec driver.HasIntent[S], Status any, S, P comparable](m *statemachine.Machine[S, P], docs []store.Document) error {
	objs := make([]*store.Object[Spec, Status], 0, len(docs))
	kind := ""
	for _, d := range docs {
		obj := &store.Object[Spec, Status]{Meta: d.Meta}
		if len(d.Spec) > 0 {
			if err := json.Unmarshal(d.Spec, &obj.Spec); err != nil {
				return fmt.Errorf("drivertest: the spec of %s %q: %w", d.Meta.Kind, d.Meta.Key, err)
			}
		}
		if len(d.Status) > 0 {
			if err := json.Unmarshal(d.Status, &obj.Status); err != nil {
				return fmt.Errorf("drivertest: the status of %s %q: %w", d.Meta.Kind, d.Meta.Key, err)
			}
		}
		kind = d.Meta.Kind
		objs = append(objs, obj)
	}
	return driver.CheckDocuments(m, kind, objs)
}

// ReadSnapshot reads the snapshot in the file at path (see
// [ParseSnapshot]).
func ReadSnapshot(path string) ([]store.Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("drivertest: reading a snapshot: %w", err)
	}
	docs, err := ParseSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("drivertest: %s: %w", path, err)
	}
	return docs, nil
}

// ParseSnapshot decodes a snapshot of documents as `tend get KIND -o json`
// writes them: one document ({"meta": …, "spec": …, "status": …}), a list
// of them ({"items": […]}), or, as --watch writes them, a stream of
// documents, one a line.
func ParseSnapshot(data []byte) ([]store.Document, error) {
	type document struct {
		Meta   store.Meta      `json:"meta"`
		Spec   json.RawMessage `json:"spec"`
		Status json.RawMessage `json:"status"`
	}
	var out []store.Document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v struct {
			document
			Items []document `json:"items"`
		}
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding a snapshot: %w", err)
		}
		if v.Meta.Key == "" && v.Items == nil {
			return nil, errors.New("decoding a snapshot: a value that is neither a document nor a list of them")
		}
		if v.Meta.Key != "" {
			v.Items = append(v.Items, v.document)
		}
		for _, d := range v.Items {
			out = append(out, store.Document{Meta: d.Meta, Spec: d.Spec, Status: d.Status})
		}
	}
}
