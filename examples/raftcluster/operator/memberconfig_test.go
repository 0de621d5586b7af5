package operator_test

import (
	"testing"

	"github.com/tendhq/tend/examples/raftcluster/operator"
	"github.com/tendhq/tend/examples/raftcluster/operator/operatortest"
)

func TestDocumentMemberConfig(t *testing.T) {
	operatortest.TestMemberConfig(t, func(t *testing.T) operator.MemberConfig {
		_, mc := memoryStore(t)
		return mc
	})
}
