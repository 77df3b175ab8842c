package shard

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// Filter says who keeps a range's objects from the others.
type Filter string

const (
	// ByAPIServer: the API server honours shardSelector (feature gate
	// ShardedListAndWatch): a replica receives only its ranges' objects.
	ByAPIServer Filter = "apiserver"
	// ByClient: the API server ignores shardSelector; each range's cache
	// filters every list and watch event on the client (ListWatch).
	ByClient Filter = "client"
)

// CheckServer asks the API server whether it honours shardSelector: it
// lists the Leases of namespace with a selector of the whole hash space,
// and an API server that applies it says so in the list's shardInfo. One
// with the feature gate off ignores the parameter and answers without:
// the ranges are then filtered on the client.
func CheckServer(ctx context.Context, leases coordinationv1client.LeasesGetter, namespace string) (Filter, error) {
	sel := Ranges(1)[0].Selector()
	list, err := leases.Leases(namespace).List(ctx, metav1.ListOptions{ShardSelector: sel, Limit: 1})
	if err != nil {
		return "", fmt.Errorf("check whether the API server honours shardSelector (list Leases in %s): %w", namespace, err)
	}
	if list.ShardInfo == nil {
		return ByClient, nil
	}
	if list.ShardInfo.Selector != sel {
		return "", fmt.Errorf("the API server answered a list with shardSelector %q for shardSelector %q", list.ShardInfo.Selector, sel)
	}
	return ByAPIServer, nil
}
