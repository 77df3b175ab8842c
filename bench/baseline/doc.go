// Package baseline is a hand-written, compiled controller-runtime operator
// for the RedisCluster of the course chapter (seed/000_b9cc85292cb11bcd.txt):
// the yardstick cueop is measured against by bench/cmd/bench.
//
// It serves the same CRD (crds/redisclusters.cache.example.com.yaml) and
// owns the same objects as templates/rediscluster/rediscluster.cue renders
// (TestSameObjects in package bench checks it): a ConfigMap <name>-config
// holding redis.conf, a Pod <name>-<i> per replica and a Service. Its Go
// types and deep copies are written by hand (no code generation).
//
// Where it differs from cueop, by design:
//   - labels: app.kubernetes.io/managed-by=redis-baseline instead of cueop's
//     three management labels (managed-by=cueop, cueop.dev/id,
//     cueop.dev/owner-uid), and no cueop.dev/applied-hash annotation;
//   - field manager redis-baseline instead of cueop;
//   - status: readyReplicas, phase, selector, observedGeneration and the
//     Ready condition; no revision and no Reconciling/Stalled conditions;
//   - no Events;
//   - its cache drops managedFields: it compares typed fields, not field
//     sets (see the InSync functions).
package baseline
