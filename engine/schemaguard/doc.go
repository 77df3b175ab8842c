// Package schemaguard is the one home of the schema guard: it checks a
// kind's new CRD against the one the cluster serves, before it is applied
// (Check), or against the one committed under a directory (Committed,
// CheckCommitted): the breaking changes (schemacompat, the pure
// comparison), each located in the new template (crdgen.Locate) and, live,
// counted over the CRs the API server stores. The operator refuses such a
// change while CRs of the kind are stored; `cueop diff` reports it; `cueop
// vet`, `crd` and `manifests` refuse it against the committed CRDs. The
// callers only report the Refusal.
//
// It must not apply a CRD nor refuse a revision itself: it reports the
// breaking changes and how many stored CRs they touch; the operator and
// the commands refuse.
package schemaguard
