// Package admission decides whether one revision of one kind may serve:
// the checks `cueop vet` runs on a template, run on any revision, from
// any source (a directory edit, a ConfigMap, a registry tag), by every
// entry point that takes one. Admit returns a Verdict: what it refuses,
// each finding naming its check, the golden case or CR it rendered, the
// message vet gives and the CUE position where known; and what it only
// warns of.
//
// In order: the references the template writes as literals are checked
// against the readable kinds; then each golden case that should succeed,
// each sample CR and CRs built from the kind's schema (crdgen: the
// fewest fields, then every field set) are rendered; a render error
// refuses (for a CR built from the schema, one that names the spec, or a
// referenced object that only a real CR's namespace would hold, proves
// nothing and passes); each child of each render is checked against the
// Kubernetes schema of its kind (kschema) and the waves for gaps. Reads
// of fields a child's kind does not have, and gates that can never open,
// are warnings, as vet words them.
//
// It must not reach a cluster, read files or the environment, or compare
// a render with expected output (a golden file that differs is a change,
// which `cueop test` reports). Renders go through the Evaluator given:
// templates are untrusted, and each render is bounded by the budget of
// the Options. What needs another process or the whole set of kinds
// (the bound trials, identities, conversions, the schema guard) is not
// here.
package admission
