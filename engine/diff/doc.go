// Package diff previews what the controller would do to a live cluster with
// the templates at hand: for every CR of the templates' kinds (or the CRs of
// a file), it renders the CR over the children that exist, as a reconcile
// does (reconcile.PreviewRender), and asks the API server what each apply
// would give with a server-side apply under cueop's field manager and
// dryRun=All, so that defaulting, admission and immutability are the API
// server's own answers. It writes nothing: every request it sends is a read
// or a dry run.
//
// Each child is classified as the reconciler would act on it:
//
//   - create: no live object;
//   - update: the dry run changes fields cueop owns;
//   - recreate: the API server refuses the change as immutable and the
//     child's policy lets cueop delete and recreate it (destructive);
//   - refused: the API server refuses the apply, refuses an immutable
//     change the policy does not let cueop recreate, or would refuse to
//     create anew a child cueop recreates; the CR would stall
//     (destructive, and an error: nothing of the CR is pruned or recreated
//     while it stands);
//   - prune: an owned child the render no longer has (destructive when it
//     holds data: a PersistentVolumeClaim); release: the same child with
//     policy prune: never, left in place.
//
// The CRs of Options.Files are first dry-run as the user's kubectl apply
// would change the live CR (applymode.go): kubectl's three-way JSON merge
// patch from the live CR's last-applied-configuration when it has one
// (it was applied client-side), else a server-side apply under kubectl's
// field manager; Options.Apply forces either. Their own diff leaves out the
// fields the file does not set and the apply does not change (crview.go).
//
// A CR's references are read from the cluster as the reconciler reads them
// (reconcile.ReadReferences, the readable kinds of Options.Render, the CR's
// namespace only), each referenced kind listed once per Run; a missing one
// is the CR's ReferenceNotFound error, nothing listed. The children of a
// kind with waves carry their wave, and those a reconcile would hold back
// behind a lower wave not ready (reconcile.GateWaves) say what they wait
// for.
//
// Run returns a Report: a summary per kind, then per CR the changed
// children with a unified diff of the fields cueop owns, cleaned of what the
// server sets (managedFields, resourceVersion, uid, status, ...).
//
// It must not change the cluster: every write it sends is a dry run.
package diff
