package operator

import (
	"fmt"
	"slices"
	"strings"
)

// The kinds of the documents the operator manages.
const (
	KindCluster = "Cluster"
	KindMember  = "Member"
)

// MemberFinalizer is put on every Member document: its process is stopped and
// its data directory removed before the document goes.
const MemberFinalizer = "raftcluster.tend.dev/member"

// ClusterSpec is the user's intent for a cluster.
type ClusterSpec struct {
	// Replicas is the number of members wanted, at least 1.
	Replicas int `json:"replicas"`
}

// Phase is a cluster's progress.
type Phase string

// The phases of a cluster.
const (
	// Initializing: the first members are being created, all at once, with
	// cluster state "new".
	Initializing Phase = "Initializing"
	// ScalingOut: one member is joining.
	ScalingOut Phase = "ScalingOut"
	// ScalingIn: one member is leaving (fewer replicas wanted, or its Member
	// document was deleted and it is being replaced).
	ScalingIn Phase = "ScalingIn"
	// Running: the membership matches the intent.
	Running Phase = "Running"
)

// ClusterStatus is the controller's record of a cluster, written only by the
// operator.
type ClusterStatus struct {
	Phase Phase `json:"phase,omitempty"`
	// NextID is the id the next member will get. Ids below it were handed out
	// once and are never handed out again. Zero means 1.
	NextID int `json:"nextID,omitempty"`
	// Members is the membership record: the members the cluster has or is
	// getting, with their ids and URLs. A joining member is recorded here,
	// with the plan, before it is added to Raft; a leaving one stays until
	// it has left. The member configuration ([MemberConfig]) is derived from
	// it: see [ClusterStatus.Configured].
	Members []MemberRef `json:"members,omitempty"`
	// Plan is the step in progress. It is written before the step starts
	// acting and cleared when it is done, so a controller that crashes
	// resumes the same step with the same ids.
	Plan *Plan `json:"plan,omitempty"`
	// ObservedGeneration is the spec generation the last settled status was
	// computed from.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Op is what a plan does.
type Op string

// The operations of a plan.
const (
	// Bootstrap creates the first members together.
	Bootstrap Op = "bootstrap"
	// Add joins one member: MemberAdd, then start it with the new
	// initial cluster and cluster state "existing".
	Add Op = "add"
	// Remove makes one member leave: stop it, then MemberRemove.
	Remove Op = "remove"
)

// Plan is one step of a cluster's progress, recorded in its status before it
// acts.
type Plan struct {
	Op Op `json:"op"`
	// Members are the members the step adds or removes: every first member
	// for Bootstrap, exactly one otherwise.
	Members []MemberRef `json:"members"`
}

// MemberRef names a member and where it listens.
type MemberRef struct {
	ID        int    `json:"id"`
	PeerURL   string `json:"peerURL"`
	ClientURL string `json:"clientURL"`
}

// Name returns the member's name in etcd: "m" and its id.
func (m MemberRef) Name() string { return MemberName(m.ID) }

// MemberName returns the etcd name of member id: "m3".
func MemberName(id int) string { return fmt.Sprintf("m%d", id) }

// MemberKey returns the key of the Member document of member id of the
// cluster under clusterKey: "demo/m3".
func MemberKey(clusterKey string, id int) string { return clusterKey + "/" + MemberName(id) }

// Endpoints returns the client URLs of every member a cluster's status knows:
// its membership record and the members of its plan.
func (s *ClusterStatus) Endpoints() []string {
	var eps []string
	add := func(ms []MemberRef) {
		for _, m := range ms {
			if !slices.Contains(eps, m.ClientURL) {
				eps = append(eps, m.ClientURL)
			}
		}
	}
	add(s.Members)
	if s.Plan != nil {
		add(s.Plan.Members)
	}
	return eps
}

// IDs returns the ids of the membership record, in order.
func (s *ClusterStatus) IDs() []int {
	ids := make([]int, len(s.Members))
	for i, m := range s.Members {
		ids[i] = m.ID
	}
	return ids
}

// Configured returns the membership the cluster's member configuration
// holds: the membership record without the member a Remove plan is taking
// out, which leaves the configuration as soon as it is chosen.
func (s *ClusterStatus) Configured() []MemberRef {
	ms := slices.Clone(s.Members)
	if p := s.Plan; p != nil && p.Op == Remove {
		ms = slices.DeleteFunc(ms, func(m MemberRef) bool {
			return slices.ContainsFunc(p.Members, func(r MemberRef) bool { return r.ID == m.ID })
		})
	}
	return ms
}

// InitialCluster returns etcd's --initial-cluster for members: their
// name=peerURL pairs, comma-separated, in order.
func InitialCluster(members []MemberRef) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = m.Name() + "=" + m.PeerURL
	}
	return strings.Join(parts, ",")
}

// MemberSpec is the intent for one member: the etcd member it runs.
type MemberSpec struct {
	// Cluster is the key of the owning cluster.
	Cluster string `json:"cluster"`
	// ID is the member's id, never reused within its cluster.
	ID int `json:"id"`
	// Name, DataDir, URLs, ClusterState and Token are the member's etcd
	// configuration. Its initial cluster is not here: the member is started
	// with the one its cluster's [MemberConfig] holds at the time.
	Name         string `json:"name"`
	DataDir      string `json:"dataDir"`
	PeerURL      string `json:"peerURL"`
	ClientURL    string `json:"clientURL"`
	ClusterState string `json:"clusterState"`
	Token        string `json:"token,omitempty"`
}

// MemberStatus is the operator's record of one member's process.
type MemberStatus struct {
	// Running reports whether the process was running when last reconciled.
	Running bool `json:"running"`
	// PID is the process id of the running process.
	PID int `json:"pid,omitempty"`
	// Starts counts how many times the process was started.
	Starts int `json:"starts,omitempty"`
}
