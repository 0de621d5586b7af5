package drivertest_test

import (
	"testing"

	"github.com/tendhq/tend/controller/drivertest"
)

func TestTmpLazy(t *testing.T) {
	drivertest.Check(t, serviceConfig(serviceDefinition(), func(c *cloud) { c.lazy = true }))
}
func TestTmpLeaky(t *testing.T) {
	drivertest.Check(t, serviceConfig(serviceDefinition(), func(c *cloud) { c.leaky = true }))
}
