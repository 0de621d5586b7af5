package etcd

import (
	"net/url"
	"strings"
)

// keyspace lays out the store's etcd keys under one prefix:
//
//	<prefix>docs/<kind>/<key>                         a document
//	<prefix>labels/<kind>/<label>=<value>/<key>       label index, empty value
//	<prefix>owners/<kind>/<escaped owner UID>/<key>   owner index, empty value
//	<prefix>leases/<name>                             a lease, attached to an etcd lease
//	<prefix>compacted                                 written by Compact to move the revision on
//
// A watch of a kind covers only its documents, so each write gives one
// event. Kinds are letters and digits and label keys and values hold no '='
// or (in values) '/', so no range of one kind or label reaches into
// another's; owner UIDs are path-escaped for the same reason.
type keyspace struct {
	prefix string
}

func (k keyspace) docs(kind string) string { return k.prefix + "docs/" + kind + "/" }

func (k keyspace) doc(kind, key string) string { return k.docs(kind) + key }

func (k keyspace) labelIndex(kind, label, value string) string {
	return k.prefix + "labels/" + kind + "/" + label + "=" + value + "/"
}

func (k keyspace) ownerIndex(kind, uid string) string {
	return k.prefix + "owners/" + kind + "/" + url.PathEscape(uid) + "/"
}

func (k keyspace) leases() string { return k.prefix + "leases/" }

func (k keyspace) lease(name string) string { return k.leases() + name }

func (k keyspace) leaseName(key string) string { return strings.TrimPrefix(key, k.leases()) }

func (k keyspace) compactMarker() string { return k.prefix + "compacted" }
