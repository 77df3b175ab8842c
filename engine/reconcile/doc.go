// Package reconcile is cueop's one generic reconciler. For one custom
// resource it runs the stages of the pipeline in order:
//
//	observe  list the children the CR owns from the informer cache
//	resolve  resolve the objects the template references, in the CR's
//	         namespace, from a watched cache (references.go: by their
//	         metadata when the reconciler has a Load); a missing one
//	         leaves the CR waiting, not rendered
//	settled  a CR whose status records a convergence at the digest of
//	         these inputs and of its children as cueop left them stops
//	         here: nothing rendered, applied or written (resync.go)
//	render   the current template over the CR, the observed children and
//	         the referenced objects (read whole only when the digest of
//	         these inputs changed: memo.go)
//	apply    server-side apply each child that would change (none
//	         otherwise), wave by wave for a kind with waves (waves.go);
//	         a child not in the cache with a create-only apply, and an
//	         existing object of its name only when the CR controls it
//	         or may adopt it, else the CR stalls (ownership.go)
//	         a wave waits for the lower ones to be ready for the gates
//	         (gateready.go: readyWhen, else kstatus, with a claim waiting
//	         for its first consumer and a LoadBalancer Service without
//	         an address counted ready), as a recreate waits for the
//	         other children
//	prune    delete owned children the render no longer has, only after
//	         every apply succeeded; release those whose live policy says
//	         prune: never (a data kind's default)
//	status   the template's status plus observedGeneration, the template
//	         revision and the kstatus conditions Ready, Reconciling and
//	         Stalled beside the template's own (conditions.go), written
//	         once and only when it changed
//
// Each stage is a small type holding only what it needs, handed to it in
// one place (Reconciler.newRun): observer (observe.go), resolver
// (references.go), inputs (resync.go: the decision), renderer
// (rendering.go), finalizers and childWriter (finalizers.go, converge.go),
// pruner (prune.go) and statusWriter (status.go). Each returns, beside what
// it did, what it implies for the CR's conditions (outcome.go: a stall, a
// wait, missing references, a render pending), which one place records
// (run.note) and one turns into the conditions (status.go); converge
// (run.go) runs the stages in this order, numbered, and reads top to
// bottom.
// A render error (a spec breaking a CUE constraint, a refused child) sets
// Stalled and changes no child. A reconcile that ends without a render of
// the CR's current inputs says why it waits, never Converged (pending.go).
// A converged CR costs no API request. cueop's finalizers are synced in one
// write (finalizers.go). A CR being deleted lists its children from the API
// server, not the cache, releases those to retain and, for a kind with
// waves, deletes the others wave by wave in the foreground before its
// finalizers come off; the user's orphan cascade deletes nothing
// (deletion.go, ordered.go). What the reconciler keeps of a CR between
// reconciles is one record (crs.go), forgotten once the CR goes. Rollout (rollout.go) chooses the revision each CR renders
// with: a new revision moves a bounded number of CRs at once; a CR waiting
// on a missing reference frees its slot (Park), and a waiting CR whose
// child drifted is repaired (Drifted).
//
// It must not load templates, install CRDs or run the manager (package
// operator), nor render by itself (package render) or write a child but
// through package apply: it is handed a compiled Kind, clients and what
// it asks of the operator (cluster.go: Cluster, Host), and writes only a
// CR's children, finalizers and status.
package reconcile
