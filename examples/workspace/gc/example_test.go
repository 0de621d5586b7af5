package gc_test

import (
	"fmt"

	"github.com/tendhq/tend/examples/workspace/gc"
)

// ExampleProtected applies the protection rules: a deleted workspace
// protects nothing, an unhealthy one its archive and failed operation, a
// healthy one its archive and the operation in flight.
func ExampleProtected() {
	protected := gc.Protected([]gc.Reference{
		{WorkspaceID: "a", Healthy: true, ArchiveKey: "a/op2/home.tar.zst", InFlightOpID: "op3"},
		{WorkspaceID: "b", Healthy: false, ArchiveKey: "b/op1/home.tar.zst", FailedOpID: "op2"},
		{WorkspaceID: "c", Healthy: true, Deleted: true, ArchiveKey: "c/op1/home.tar.zst"},
	})
	for _, key := range []string{"a/op1/home.tar.zst", "a/op2/home.tar.zst", "a/op3/home.tar.zst",
		"b/op1/home.tar.zst", "b/op2/home.tar.zst", "c/op1/home.tar.zst"} {
		if rule, ok := protected[key]; ok {
			fmt.Printf("%s protected: %s\n", key, rule)
		} else {
			fmt.Printf("%s orphan\n", key)
		}
	}
	// Output:
	// a/op1/home.tar.zst orphan
	// a/op2/home.tar.zst protected: referenced by archive_key
	// a/op3/home.tar.zst protected: operation in flight
	// b/op1/home.tar.zst protected: workspace unhealthy
	// b/op2/home.tar.zst protected: workspace unhealthy
	// c/op1/home.tar.zst orphan
}
