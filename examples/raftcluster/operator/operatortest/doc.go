// Package operatortest checks implementations of the operator's seams
// against their contracts: [TestMemberConfig] runs the same checks on every
// [operator.MemberConfig], a document in a store or a ConfigMap, so they
// cannot drift apart.
package operatortest
