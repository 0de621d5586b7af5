// Package redact keeps the values of fields marked sensitive out of text: log
// lines, span attributes, error messages and history entries.
//
// A field is sensitive when its struct tag has the key tend and the option
// sensitive:
//
//	type DatabaseSpec struct {
//		Host     string `json:"host"`
//		Password string `json:"password" tend:"sensitive"`
//	}
//
// Every value under a sensitive field is a secret: a string, a []byte, a
// non-zero number, and every such value inside a struct, slice, array, map
// or pointer held by the field. Empty strings, zero numbers and booleans are
// not.
//
// [New] collects the secrets of the documents it is given and returns a
// [Scrubber], which replaces each secret found in a text with [Marker]. The
// fields to look at are found once per type, by reflection, and cached, so a
// type without a sensitive field costs a map lookup and no allocation.
//
// Redaction is by value: a secret is removed from any text that contains
// it, however it got there — an error returned by a step that quoted its
// input, a reason an observer wrote, a panic value. What it cannot catch is
// a secret transformed on the way (encoded, hashed, split); keep secrets out
// of such text at the source.
//
// Package redact/redactzap applies a Scrubber to every part of a zap log
// entry: logger name, message, caller, stack, field keys, namespaces and
// values.
package redact
