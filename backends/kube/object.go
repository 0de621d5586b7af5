package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/tendhq/tend/store"
)

// canonical returns a JSON payload as the API server gives it back: keys
// sorted, no spaces, numbers as integers where they are whole. Empty stays
// empty.
func canonical(payload []byte) ([]byte, error) {
	if len(payload) == 0 {
		return nil, nil
	}
	var v any
	if err := utiljson.Unmarshal(payload, &v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return encode(v)
}

// encode is the one JSON encoding of payloads read from objects.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// setPayload sets field ("spec" or "status") of u to the JSON payload, or
// removes it when the payload is empty.
func setPayload(u *unstructured.Unstructured, field string, payload []byte) error {
	if len(payload) == 0 {
		delete(u.Object, field)
		return nil
	}
	var v any
	if err := utiljson.Unmarshal(payload, &v); err != nil {
		return fmt.Errorf("%w: %s is not JSON: %w", store.ErrInvalid, field, err)
	}
	u.Object[field] = v
	return nil
}

// setSpec writes what UpdateSpec owns into u: spec, labels, finalizers,
// owner references and the key and owner annotations.
func (s *Store) setSpec(u *unstructured.Unstructured, d store.Document) error {
	if err := setPayload(u, "spec", d.Spec); err != nil {
		return err
	}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[s.keyAnnotation()] = d.Meta.Key
	delete(ann, s.ownersAnnotation())
	refs := make([]metav1.OwnerReference, len(d.Meta.Owners))
	if len(d.Meta.Owners) > 0 {
		keys := make(map[string]string, len(d.Meta.Owners))
		for i, o := range d.Meta.Owners {
			keys[o.UID] = o.Key
			refs[i] = metav1.OwnerReference{
				APIVersion: s.cfg.Group + "/" + Version, Kind: o.Kind, Name: ObjectName(o.Key), UID: types.UID(o.UID),
				Controller: ptr(o.Controller), BlockOwnerDeletion: ptr(o.BlockOwnerDeletion),
			}
		}
		b, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		ann[s.ownersAnnotation()] = string(b)
	}
	u.SetAnnotations(ann)
	u.SetOwnerReferences(refs)
	u.SetLabels(d.Meta.Labels)
	u.SetFinalizers(d.Meta.Finalizers)
	return nil
}

// document converts an object of kind. It reports false for an object
// without the key annotation, which the store did not write.
func (s *Store) document(kind string, u *unstructured.Unstructured) (store.Document, bool, error) {
	ann := u.GetAnnotations()
	key, ok := ann[s.keyAnnotation()]
	if !ok {
		return store.Document{}, false, nil
	}
	rev, err := parseRevision(u.GetResourceVersion())
	if err != nil {
		return store.Document{}, false, err
	}
	m := store.Meta{
		Kind: kind, Key: key, UID: string(u.GetUID()), Revision: rev, Generation: u.GetGeneration(),
		CreatedAt: u.GetCreationTimestamp().Time, Finalizers: u.GetFinalizers(),
	}
	m.UpdatedAt = m.CreatedAt
	for _, f := range u.GetManagedFields() {
		if f.Time != nil && f.Time.After(m.UpdatedAt) {
			m.UpdatedAt = f.Time.Time
		}
	}
	if t := u.GetDeletionTimestamp(); t != nil {
		m.DeletionRequestedAt = t.Time
		m.UpdatedAt = latest(m.UpdatedAt, t.Time)
		// The API server adds one to the generation when it records the
		// deletion request; for the store only spec changes count.
		m.Generation--
	}
	if l := u.GetLabels(); len(l) > 0 {
		m.Labels = l
	}
	if refs := u.GetOwnerReferences(); len(refs) > 0 {
		var keys map[string]string
		if a := ann[s.ownersAnnotation()]; a != "" {
			if err := json.Unmarshal([]byte(a), &keys); err != nil {
				return store.Document{}, false, fmt.Errorf("annotation %s: %w", s.ownersAnnotation(), err)
			}
		}
		for _, r := range refs {
			k, ok := keys[string(r.UID)]
			if !ok {
				k = r.Name
			}
			m.Owners = append(m.Owners, store.OwnerRef{Kind: r.Kind, Key: k, UID: string(r.UID),
				Controller: r.Controller != nil && *r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion})
		}
	}
	d := store.Document{Meta: m}
	for field, out := range map[string]*[]byte{"spec": &d.Spec, "status": &d.Status} {
		v, ok := u.Object[field]
		if !ok {
			continue
		}
		if m, ok := v.(map[string]any); ok && field == "status" && s.typed[kind].driven {
			v = withoutSummary(m)
		}
		b, err := encode(v)
		if err != nil {
			return store.Document{}, false, fmt.Errorf("%s: %w", field, err)
		}
		*out = b
	}
	return d, true, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// parseRevision reads a resourceVersion. Kubernetes calls resource versions
// opaque; every API server backed by etcd uses etcd's revision, a decimal
// integer, and the store relies on that to order writes.
func parseRevision(rv string) (int64, error) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("resourceVersion %q is not a positive integer: the store needs an API server backed by etcd", rv)
	}
	return n, nil
}

func formatRevision(rev int64) string { return strconv.FormatInt(rev, 10) }

func typesUID(uid string) types.UID { return types.UID(uid) }

// withoutSummary returns the status m without the summary the store wrote
// into it ([SummaryField]).
func withoutSummary(m map[string]any) map[string]any {
	if _, ok := m[SummaryField]; !ok {
		return m
	}
	out := make(map[string]any, len(m)-1)
	for k, v := range m {
		if k != SummaryField {
			out[k] = v
		}
	}
	return out
}

// summaryOf returns the summary of a driven document's status payload,
// written when its spec is at generation; "" for no status.
func summaryOf(status []byte, generation int64) string {
	var m map[string]any
	if len(status) == 0 || utiljson.Unmarshal(status, &m) != nil || m == nil {
		return ""
	}
	return summary(m, generation)
}

// writtenSummary returns the summary stored in the object u.
func writtenSummary(u *unstructured.Unstructured) string {
	s, _, _ := unstructured.NestedString(u.Object, "status", SummaryField)
	return s
}
