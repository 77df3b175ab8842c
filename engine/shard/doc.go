// Package shard spreads the CRs cueop serves over several replicas with what
// Kubernetes provides: the hash space of CR uids is cut into ranges, each
// range is held through a Lease of its own (coordination.k8s.io), and the
// holder of a range caches only its CRs. It asks for them with the API
// server's sharded list and watch (KEP-5866, feature gate
// ShardedListAndWatch): the metav1.ListOptions field shardSelector, sent as
// the query parameter shardSelector, for example
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// The API server hashes object.metadata.uid with 64-bit FNV-1a and keeps
// the objects whose hash h has start <= h < end. An API server without the
// gate ignores the parameter: Range.ListWatch then filters by the same
// hash on the client (a list whose shardInfo does not echo the selector,
// and every watch event), and CheckServer tells a replica which of the two
// it gets (Filter).
//
// It must not know cueop's kinds nor reconcile anything: it hands out
// ranges, their Leases and the selectors of their objects.
package shard
