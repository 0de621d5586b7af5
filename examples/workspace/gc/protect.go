package gc

import "github.com/tendhq/tend/examples/workspace/archive"

// Reference is what the protection rules need to know of one workspace.
type Reference struct {
	// WorkspaceID is the workspace's id.
	WorkspaceID string
	// Deleted is set when deleted_at is set (the user deleted it).
	Deleted bool
	// Healthy is false while the workspace is in ERROR.
	Healthy bool
	// ArchiveKey is the archive the workspace references, or "".
	ArchiveKey string
	// InFlightOpID is the op_id of the operation in flight, or "".
	InFlightOpID string
	// FailedOpID is the op_id of the operation whose terminal failure put
	// the workspace in ERROR, or "".
	FailedOpID string
}

// Rule names the rule that decided an archive's protection.
type Rule string

// Rules, as reported by [Protected].
const (
	RuleReferenced Rule = "referenced by archive_key"
	RuleUnhealthy  Rule = "workspace unhealthy"
	RuleInFlight   Rule = "operation in flight"
)

// Protected applies the protection rules to refs, in priority order, and
// returns the protected archive keys with the rule that protects each. A
// deleted workspace protects nothing, whatever else holds.
func Protected(refs []Reference) map[string]Rule {
	out := map[string]Rule{}
	protect := func(key string, r Rule) {
		if _, ok := out[key]; !ok && key != "" {
			out[key] = r
		}
	}
	opPath := func(ws, op string) string {
		if op == "" {
			return ""
		}
		return archive.Key(ws, op)
	}
	for _, ref := range refs {
		switch {
		case ref.Deleted: // rule 1
			continue
		case !ref.Healthy: // rule 2
			protect(ref.ArchiveKey, RuleUnhealthy)
			protect(opPath(ref.WorkspaceID, ref.FailedOpID), RuleUnhealthy)
			protect(opPath(ref.WorkspaceID, ref.InFlightOpID), RuleUnhealthy)
			continue
		}
		protect(opPath(ref.WorkspaceID, ref.InFlightOpID), RuleInFlight) // rule 3
		protect(ref.ArchiveKey, RuleReferenced)
	}
	return out
}
