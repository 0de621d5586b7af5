package queueprom_test

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tendhq/tend/workqueue"
	"github.com/tendhq/tend/workqueue/queueprom"
)

// A queue reporting to a Prometheus registry.
func Example() {
	reg := prometheus.NewRegistry()
	q, err := workqueue.New(workqueue.Config[string]{
		Name:    "gateways",
		Metrics: queueprom.New(queueprom.Config{Registerer: reg}),
	})
	if err != nil {
		panic(err)
	}
	defer q.ShutDown()
	q.Add("gw-1")
	q.Add("gw-2")

	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="gateways"} 2
`), "workqueue_depth")
	fmt.Println(err)
	// Output: <nil>
}
