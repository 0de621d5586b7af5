package docker_test

import (
	"fmt"

	"github.com/moby/moby/client"

	"github.com/tendhq/tend/examples/workspace/docker"
	"github.com/tendhq/tend/examples/workspace/local"
)

// Workspace w1 lives in the engine as container ws-w1 with volume
// ws-w1-home, and, once restored from an archive, the marker volume
// ws-w1-home-restored.
func ExampleMarkerName() {
	fmt.Println(local.ContainerName("w1"), local.VolumeName("w1"), docker.MarkerName("w1"))
	// Output: ws-w1 ws-w1-home ws-w1-home-restored
}

// The backends share one client of the engine; nothing is contacted before
// the first call.
func ExampleNewInstances() {
	cli, err := client.New(client.WithHost("unix:///run/tend-docker.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	in, err := docker.NewInstances(docker.InstancesConfig{Client: cli})
	fmt.Println(in != nil, err)
	// Output: true <nil>
}
