// Package reconcile is cueop's one generic reconciler. For one custom
// resource it runs the stages of the pipeline in order, each in its one
// file, which says at its top what the stage does and must not do:
//
//	0 admit    the kind may act in the CR's namespace, the CR is not
//	           stalled over its render budget (forbidden.go)
//	1 observe  list the children the CR owns from the informer cache
//	           (observe.go)
//	2 resolve  resolve the objects the template references, in the CR's
//	           namespace, from a watched cache (by their metadata when the
//	           reconciler has a Load); a missing one leaves the CR
//	           waiting, not rendered (references.go)
//	3 decide   a CR whose status records a convergence at the digest of
//	           these inputs and of its children as cueop left them stops
//	           here: nothing rendered, applied or written (resync.go)
//	4 render   the current template over the CR, the observed children
//	           and the referenced objects (read whole only when the digest
//	           of these inputs changed: the memo) (rendering.go)
//	5 apply    cueop's finalizers first (deletion.go), then server-side
//	           apply each child that would change (none otherwise), wave
//	           by wave for a kind with waves; a child not in the cache
//	           with a create-only apply, and an existing object of its
//	           name only when the CR controls it or may adopt it, else the
//	           CR stalls; a wave waits for the lower ones to be ready for
//	           the gates (readyWhen, else kstatus, with a claim waiting for
//	           its first consumer and a LoadBalancer Service without an
//	           address counted ready), as a recreate waits for the other
//	           children (converge.go)
//	6 prune    delete owned children the render no longer has, only after
//	           every apply succeeded; release those whose live policy says
//	           prune: never (a data kind's default) (prune.go)
//	7 status   the template's status plus observedGeneration, the template
//	           revision and the kstatus conditions Ready, Reconciling and
//	           Stalled beside the template's own, written once and only
//	           when it changed (status.go)
//
// run.go runs them (reconcileLive, converge), numbered, and reads top to
// bottom. Each stage is a small type holding only what it needs, handed to
// it in one place (Reconciler.newRun, reconciler.go): observer, resolver,
// inputs (the decision), renderer, finalizers and childWriter, pruner and
// statusWriter. Each returns, beside what it did, what it implies for the
// CR's conditions (an outcome: a stall, a wait, missing references, a
// render pending), which one place records (run.note) and one turns into
// the conditions (run.conditions, status.go).
//
// A render error (a spec breaking a CUE constraint, a refused child) sets
// Stalled and changes no child. A reconcile that ends without a render of
// the CR's current inputs says why it waits, never Converged. A converged
// CR costs no API request. cueop's finalizers are synced in one write. A
// CR being deleted lists its children from the API server, not the cache,
// releases those to retain and, for a kind with waves, deletes the others
// wave by wave in the foreground before its finalizers come off; the
// user's orphan cascade deletes nothing (deletion.go). The Events and
// metrics of a reconcile are events.go's. What the reconciler keeps of a
// CR between reconciles is one record (crs, reconciler.go), forgotten once
// the CR goes. Rollout (rollout.go) chooses the revision each CR renders
// with: a new revision moves a bounded number of CRs at once; a CR waiting
// on a missing reference frees its slot (Park), and a waiting CR whose
// child drifted is repaired (Drifted). preview.go renders a CR as a
// reconcile would, for cueop diff; no reconcile runs it.
//
// It must not load templates, install CRDs or run the manager (package
// operator), nor render by itself (package render) or write a child but
// through package apply: it is handed a compiled Kind, clients and what
// it asks of the operator (Cluster, Host: reconciler.go), and writes only
// a CR's children, finalizers and status.
package reconcile
