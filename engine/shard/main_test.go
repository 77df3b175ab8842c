package shard_test

import (
	"testing"

	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// The package's cluster runs kube-apiserver with its default feature gates:
// ShardedListAndWatch off.
func TestMain(m *testing.M) {
	clustertest.SetLogger()
	clustertest.Main(m, localcluster.Options{ControlPlaneOnly: true})
}
