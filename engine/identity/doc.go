// Package identity names the ServiceAccount each kind acts as. A kind's
// identity is its group and kind; the administrator maps it to a
// ServiceAccount (flags of `cueop run`, `cueop manifests`, `cueop dev`), and
// a template never chooses its own. Every request cueop makes for a kind's
// children and references is made as that ServiceAccount (client-go
// impersonation), so the API server, not only cueop, enforces what a kind
// may do.
//
// It must not write RBAC (package rbacgen) nor reach a cluster: it names;
// others bind and impersonate.
package identity
