package infra

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
)

// auditEvent is the part of an audit.k8s.io/v1 Event that AuditOps reads.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// AuditOps reads the API server's audit log (JSON lines of audit.k8s.io/v1
// Events, Metadata level or above, recording every create, update, patch,
// delete and deletecollection) and returns the changes it records to the
// platform's resources in the given namespaces (gateway ids), as the [Op]
// sequence [Sim.Ops] gives, so that the same checks run on the cluster's
// own records:
//
//   - OpApply: a server-side apply by this Kube's field manager, or any
//     creation;
//   - OpDelete: the first deletion request of an existing resource;
//   - OpGone: the resource disappeared. An audit event does not say that
//     its write removed the object, but removal is always a write (a
//     delete, or the update that removes the last finalizer), so a deleted
//     resource went with the last successful write to it before it was
//     created anew, or before the end of the log when it no longer exists
//     (Kube reads it to know). A resource still Terminating has no OpGone.
//
// Ops are in the log's order, which is the order the API server completed
// the requests; each has the time the server received its request, which
// is never later than the change itself, so ops merged by time with those
// of another system ([MergeOps]) never show a change before one that caused
// it. Labels are not in the audit log and are left empty.
func (k *Kube) AuditOps(ctx context.Context, log io.Reader, namespaces []string) ([]Op, error) {
	var (
		changes []change
		lives   = map[Ref]*lifetime{}
	)
	life := func(ref Ref) *lifetime {
		l, ok := lives[ref]
		if !ok {
			l = &lifetime{}
			lives[ref] = l
		}
		return l
	}
	gone := func(l *lifetime) {
		c := l.last
		c.op.Type = OpGone
		changes = append(changes, c)
	}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for i := 0; sc.Scan(); i++ {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("infra: audit log line %d: %w", i+1, err)
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil || e.ResponseStatus == nil ||
			e.ResponseStatus.Code < 200 || e.ResponseStatus.Code > 299 {
			continue
		}
		refs := auditRefs(e, namespaces, lives)
		for _, ref := range refs {
			l := life(ref)
			at := change{op: Op{Ref: ref, Time: e.RequestReceivedTimestamp}, index: i}
			apply := e.Verb == "patch" && e.ObjectRef.Subresource == "" && fieldManager(e.RequestURI) == k.c.FieldManager()
			switch {
			case e.ResponseStatus.Code == 201 && e.ObjectRef.Subresource == "": // created, by anyone
				if l.deleted {
					gone(l)
				}
				at.op.Type = OpApply
				changes = append(changes, at)
				*l = lifetime{live: true}
			case e.Verb == "delete" || e.Verb == "deletecollection":
				if !l.deleted {
					at.op.Type = OpDelete
					changes = append(changes, at)
					l.deleted = true
				}
				l.last = at
			case l.deleted: // a write to a Terminating resource
				l.last = at
			case apply:
				at.op.Type = OpApply
				changes = append(changes, at)
				l.live = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("infra: reading the audit log: %w", err)
	}
	for ref, l := range lives {
		if !l.deleted {
			continue
		}
		_, err := k.Get(ctx, ref)
		switch {
		case errors.Is(err, ErrNotFound):
			gone(l)
		case err != nil:
			return nil, err
		}
	}
	// A resource's delete and its going in one request: delete first.
	slices.SortStableFunc(changes, func(a, b change) int {
		return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(rank(a.op.Type), rank(b.op.Type)))
	})
	ops := make([]Op, len(changes))
	for i, c := range changes {
		ops[i] = c.op
		ops[i].Seq = i + 1
	}
	return ops, nil
}

func rank(t OpType) int {
	if t == OpGone {
		return 1
	}
	return 0
}

// change is an op derived from the event at index in the audit log.
type change struct {
	op    Op
	index int
}

// lifetime is what the audit log told so far of one resource since it was
// last created.
type lifetime struct {
	live, deleted bool
	last          change // the last write since deletion was requested
}

// auditRefs returns the platform's resources in namespaces that e wrote:
// one, or for a deletecollection every resource of its kind and namespace
// that exists and is not Terminating.
func auditRefs(e auditEvent, namespaces []string, lives map[Ref]*lifetime) []Ref {
	o := e.ObjectRef
	var kind Kind
	for k, kk := range kubeKinds {
		if group, _, ok := strings.Cut(kk.apiVersion, "/"); kk.resource == o.Resource && (ok && group == o.APIGroup || !ok && o.APIGroup == "") {
			kind = k
		}
	}
	switch {
	case kind == "":
		return nil
	case kind == Namespace:
		if !slices.Contains(namespaces, o.Name) {
			return nil
		}
		return []Ref{{Kind: Namespace, Name: o.Name}}
	case !slices.Contains(namespaces, o.Namespace):
		return nil
	case o.Name != "":
		return []Ref{{Kind: kind, Namespace: o.Namespace, Name: o.Name}}
	}
	var refs []Ref
	for ref, l := range lives {
		if ref.Kind == kind && ref.Namespace == o.Namespace && l.live && !l.deleted {
			refs = append(refs, ref)
		}
	}
	slices.SortFunc(refs, func(a, b Ref) int { return cmp.Compare(a.Name, b.Name) })
	return refs
}

// fieldManager returns the fieldManager parameter of a request URI.
func fieldManager(requestURI string) string {
	u, err := url.Parse(requestURI)
	if err != nil {
		return ""
	}
	return u.Query().Get("fieldManager")
}

// MergeOps merges operation logs, each in its own order, into one ordered
// by time: an op comes before the ops of other logs with a later time, and
// each log's order is kept. Seq is renumbered from 1.
func MergeOps(logs ...[]Op) []Op {
	var out []Op
	next := make([]int, len(logs))
	for {
		best := -1
		for i, l := range logs {
			if next[i] < len(l) && (best < 0 || l[next[i]].Time.Before(logs[best][next[best]].Time)) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		op := logs[best][next[best]]
		next[best]++
		op.Seq = len(out) + 1
		out = append(out, op)
	}
}
