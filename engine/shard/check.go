package shard

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// ErrNotHonoured is the error of CheckServer on an API server that ignores
// shardSelector.
var ErrNotHonoured = errors.New("the API server does not honour shardSelector on list and watch (KEP-5866): " +
	"sharding (--shards greater than 1) needs kube-apiserver started with --feature-gates=ShardedListAndWatch=true " +
	"(alpha since Kubernetes 1.36, off by default); or run with --shards 1")

// CheckServer asks the API server whether it honours shardSelector: it
// lists the Leases of namespace with a selector of the whole hash space,
// and an API server that applies it says so in the list's shardInfo. One
// with the feature gate off ignores the parameter and answers without.
func CheckServer(ctx context.Context, leases coordinationv1client.LeasesGetter, namespace string) error {
	sel := Ranges(1)[0].Selector()
	list, err := leases.Leases(namespace).List(ctx, metav1.ListOptions{ShardSelector: sel, Limit: 1})
	if err != nil {
		return fmt.Errorf("check that the API server honours shardSelector (list Leases in %s): %w", namespace, err)
	}
	if list.ShardInfo == nil {
		return ErrNotHonoured
	}
	if list.ShardInfo.Selector != sel {
		return fmt.Errorf("the API server answered a list with shardSelector %q for shardSelector %q", list.ShardInfo.Selector, sel)
	}
	return nil
}
