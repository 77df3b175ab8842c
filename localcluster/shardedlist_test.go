package localcluster_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// The shared cluster runs kube-apiserver with Options.FeatureGates
// ShardedListAndWatch=true (TestMain): a list with a shardSelector returns
// only the objects whose FNV-1a hash of the uid falls in the range, and says
// so in listMeta.shardInfo.
func TestFeatureGateShardedList(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	cs, err := kubernetes.NewForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, cm := range all.Items {
		if sharding.HashField(string(cm.UID)) < "8000000000000000" {
			want = append(want, cm.Name)
		}
	}
	const selector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	list, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{ShardSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if list.ShardInfo == nil || list.ShardInfo.Selector != selector {
		t.Fatalf("shardInfo = %+v, want the selector echoed (is the gate on?)", list.ShardInfo)
	}
	var got []string
	for _, cm := range list.Items {
		got = append(got, cm.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("sharded list = %v, want the %d of %d whose uid hashes below 2^63: %v", got, len(want), len(all.Items), want)
	}
}
