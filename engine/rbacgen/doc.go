// Package rbacgen writes the RBAC of cueop from what its kinds render: a
// pure stage, values in (a kind, the child kinds and referenced kinds its
// golden cases and samples render, the administrator's identity.Config),
// rbacv1 objects out, no client. `cueop manifests`, `cueop vet` and the
// tests call the same functions, so the rights a kind is shown to need are
// the rights the generated manifests grant it.
//
// A kind acts as its own ServiceAccount (engine/identity): its ClusterRole
// grants what cueop does to its children (ChildVerbs), get, list and watch
// on the kinds it references, update of its CRs' finalizers (the
// blockOwnerDeletion of its children's owner references) and get on
// StorageClasses when it renders PersistentVolumeClaims (a wave gate reads
// a Pending claim's class). The operator's own ClusterRole (Operator) keeps
// its CRs, their status, the CRDs and events, and a Role in the identity
// namespace lets it impersonate exactly the kinds' ServiceAccounts
// (Impersonation). Shared is the older single role, the union of all.
//
// It must not reach an API server nor apply what it writes.
package rbacgen
