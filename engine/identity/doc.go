// Package identity names the ServiceAccount each kind acts as, and writes
// the rights that ServiceAccount is granted. A kind's identity is its
// group and kind; the administrator maps it to a ServiceAccount (flags of
// `cueop run`, `cueop manifests`, `cueop dev`), and a template never
// chooses its own. Every request cueop makes for a kind's children and
// references is made as that ServiceAccount (client-go impersonation), so
// the API server, not only cueop, enforces what a kind may do.
//
// The rights (rbac.go, rules.go, operatorrules.go) are a pure stage: values
// in (a kind, the child kinds and referenced kinds it renders, the
// administrator's Config), rbacv1 objects out. Derive (derive.go) reads
// those kinds from the template's CUE source, every branch of its
// conditionals and comprehensions included, so that a kind needs no
// golden case to get its rights; the callers add what the golden cases
// and samples render, which alone shows a kind computed from the CR. `cueop manifests`, `cueop
// vet`, `cueop dev` and the tests call the same functions, so the rights a
// kind is shown to need are the rights the generated manifests grant it. A
// kind's ClusterRole grants what cueop does to its children (ChildVerbs),
// get, list and watch on the kinds it references, update of its CRs'
// finalizers (the blockOwnerDeletion of its children's owner references)
// and get on StorageClasses when it renders PersistentVolumeClaims (a wave
// gate reads a Pending claim's class). The operator's own ClusterRole
// (Operator) keeps its CRs, their status, the CRDs and events, and a Role
// in the identity namespace lets it impersonate exactly the kinds'
// ServiceAccounts (Impersonation). Shared is the older single role, the
// union of all.
//
// It must not reach an API server nor apply what it writes: it names and
// writes; others bind and impersonate.
package identity
