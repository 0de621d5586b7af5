package expectations_test

import (
	"context"
	"fmt"

	"github.com/tendhq/tend/expectations"
)

// A replica-set style controller expects the creations it is about to issue, and does not act on the key again
// until the watch has shown them all.
func ExampleCounts() {
	exp, err := expectations.NewCounts[string](expectations.CountsConfig{})
	if err != nil {
		panic(err)
	}
	const key = "default/web"

	exp.ExpectCreations(key, 2) // before creating two replicas
	fmt.Println("satisfied:", exp.SatisfiedExpectations(key))

	exp.CreationObserved(key) // from the watch
	add, del, _ := exp.Get(key)
	fmt.Println("pending:", add, del)

	exp.CreationObserved(key)
	fmt.Println("satisfied:", exp.SatisfiedExpectations(key))
	// Output:
	// satisfied: false
	// pending: 1 0
	// satisfied: true
}

// A cluster controller scaling from three members to five expects members 4 and 5 by id: a creation it did not
// ask for cannot satisfy it.
func ExampleNames() {
	exp, err := expectations.NewNames[string, uint64](expectations.NamesConfig{})
	if err != nil {
		panic(err)
	}
	const key = "prod/etcd"

	exp.ExpectCreations(key, 4, 5)
	exp.CreationObserved(key, 9) // not expected: ignored
	exp.CreationObserved(key, 4)
	add, _ := exp.Pending(key)
	fmt.Println("still expected:", add, "satisfied:", exp.SatisfiedExpectations(key))

	exp.CreationObserved(key, 5)
	fmt.Println("satisfied:", exp.SatisfiedExpectations(key))
	// Output:
	// still expected: [5] satisfied: false
	// satisfied: true
}

// A reconciler records the revision of its write; the cache reports how far it has read.
func ExampleGate() {
	var gate expectations.Gate[string]

	gate.Wrote("orders/42", 17) // the store returned revision 17
	gate.Observed(16)
	fmt.Println("ready at 16:", gate.Ready("orders/42"))
	gate.Observed(17)
	fmt.Println("ready at 17:", gate.Ready("orders/42"))
	// Output:
	// ready at 16: false
	// ready at 17: true
}

// Wait blocks a worker until the cache, fed by its own watch, catches up with the worker's last write.
func ExampleGate_Wait() {
	var gate expectations.Gate[string]
	gate.Wrote("orders/42", 3)

	// The cache applies the store's change log in revision order, in its own goroutine.
	cacheDone := make(chan struct{})
	go func() {
		defer close(cacheDone)
		for rev := int64(1); rev <= 5; rev++ {
			gate.Observed(rev)
		}
	}()

	if err := gate.Wait(context.Background(), "orders/42"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the cache shows revision 3 of orders/42 or later")
	<-cacheDone
	// Output:
	// the cache shows revision 3 of orders/42 or later
}
