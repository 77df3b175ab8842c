// Package operator wires cueop into a controller-runtime manager: one
// controller per kind of the templates directory, all running the generic
// reconciler, and a watch on the templates directory that swaps a kind's
// template in place when it changes (hot reload), starts a controller for a
// new kind and stops the controller of a removed one. With InstallCRDs, a
// kind's CRD is applied first, unless it breaks the schema of a kind with
// stored CRs (schemaguard): then the new revision is refused, reported as a
// template error, and the last good one keeps serving. Every replica,
// leader or not, serves the conversion webhook of the kinds with several
// versions with the last good revision's conversions (conversion.go).
//
// Three caches serve the reconcilers. The CRs are read from an unfiltered
// cache of their own; children are read from the manager's cache, which
// holds only objects labelled app.kubernetes.io/managed-by=cueop, so memory
// does not grow with unrelated objects in the cluster; the kinds templates
// reference are cached by their metadata only, and the few objects a render
// needs are read whole (references.go, refobjects.go).
//
// Each job has one owner, a type with its own state; the Operator only
// wires them (operator.go: the options' defaults in one place, the
// manager, the caches, the metrics) and none keeps a pointer back to it:
//
//   - the kinds' lifecycle (kindLifecycle, lifecycle.go): one record per
//     kind with an explicit phase (Admitted, WaitingForCRD, Serving,
//     Refused, HeldElsewhere, Unserved), changed only under its lock by a
//     reload or the end of a wait; it admits each revision (holder.go,
//     conversion.go, schemaguard.go), waits for CRDs (crdwait.go) and
//     retries what time may clear (unserved.go);
//   - the kinds' controllers (kindRunner, runner.go): a reconciler wired
//     to its kind's identity, its watches and rollout pacing; started and
//     stopped by the lifecycle, never recorded by itself;
//   - the CRDs (crdWriter, crds.go, holder.go, cabundle.go): applied past
//     the schema guard, their holder recorded and checked, pointed at the
//     conversion webhook, Events and conditions put on them;
//   - the templates' load (templateLoader, loader.go) and where
//     evaluations run: the render and conversion workers (package worker);
//   - the conversions served (conversions, conversion.go) with packages
//     convert and webhook.
//
// Beside the controllers, the operator runs, per kind:
//
//   - identities (Options.Identities; identities.go, identitywatch.go): a
//     kind may act as its own ServiceAccount, impersonated, with a cache
//     and clients of its own (a bundle) whose children carry
//     wellknown.LabelIdentity; a kind's refused requests stall its CRs
//     (forbidden.go);
//   - storage migration (migrate.go): when a CRD's storedVersions hold
//     versions other than its storage version, the leader (with --shards,
//     the holder of the first range) rewrites every stored CR (package
//     migrate), reporting on the CRD in Events, metrics and a condition;
//   - Template objects (templatestatus.go, templatewriter.go,
//     templatedrift.go): one cueop.dev/v1alpha1 Template per kind, whose
//     status tells where the serving revision came from and why the newest
//     does not serve (conditions in package wellknown);
//   - sharding (NewSharded, Options.Shard; shard.go, package shard): the
//     CRs are spread over the replicas by ranges of their uid hash, each
//     range's holder caching and reconciling only its CRs and children;
//   - the release key of released children (releaseKeys, releasekey.go).
//
// The operator wires; it must not render, apply or write a CR's status
// itself (packages render, apply and reconcile do), nor decide what a
// schema change or a conversion means (schemaguard, schemacompat,
// convert): it calls them and reports what they say.
package operator
