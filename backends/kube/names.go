package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Version is the API version of every custom resource the store defines.
const Version = "v1"

// slugLen bounds the readable part of an object name.
const slugLen = 63

// ObjectName returns the Kubernetes object name that stores the document or
// lease with key: the key in lower case with every byte other than a letter
// or digit replaced by '-' (at most 63 bytes, trimmed of '-'), then '-' and
// the first 32 hexadecimal digits of the key's SHA-256. The name is a valid
// DNS subdomain of at most 96 bytes whatever the key, and keys that differ
// only in case or punctuation get different names. The key itself is kept
// in the object's key annotation, so names are never decoded.
func ObjectName(key string) string {
	sum := sha256.Sum256([]byte(key))
	hash := hex.EncodeToString(sum[:16])
	slug := make([]byte, 0, min(len(key), slugLen))
	for i := 0; i < len(key) && len(slug) < slugLen; i++ {
		switch c := key[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			slug = append(slug, c)
		case 'A' <= c && c <= 'Z':
			slug = append(slug, c+'a'-'A')
		default:
			slug = append(slug, '-')
		}
	}
	s := strings.Trim(string(slug), "-")
	if s == "" {
		return hash
	}
	return s + "-" + hash
}

// Plural returns the resource name of kind: the kind in lower case with the
// English plural ending ("ApiGateway" → "apigateways", "Policy" →
// "policies", "Address" → "addresses").
func Plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "z"),
		strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case len(k) > 1 && strings.HasSuffix(k, "y") && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

// resource returns the group, version and resource of kind.
func resource(group, kind string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: Version, Resource: Plural(kind)}
}
