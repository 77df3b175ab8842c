// Package schemacompat tells whether a new CustomResourceDefinition keeps
// what the CRs stored under the old one mean. It is pure: two CRDs (or two
// OpenAPI schemas) in, a list of changes out, each safe or breaking, with
// the field path and the value before and after.
//
// It compares the generated OpenAPI schemas, x-kubernetes-validations
// included, not CUE text: any two ways of writing the same schema compare
// equal. Per served version of the old CRD:
//
//	safe      a new optional field, a new field with a default, a widened bound
//	          (minimum, maximum, lengths, item and property counts), a new enum
//	          value, a removed pattern or format, a field no longer required, a
//	          widened type (integer to number, to int-or-string), a rule removed,
//	          documentation, printer columns, subresources, a new version
//	breaking  a field added to an object that kept unknown fields (a stored
//	          CR may hold it already), a field removed, a field renamed (a removal and an addition of
//	          the same schema at the same level, reported as one change), a
//	          type changed, a bound narrowed, a pattern or format added or
//	          changed, an enum value removed, a field made required, a default
//	          changed, added to an existing field or removed, unknown fields no
//	          longer preserved, a new or changed CEL rule that cannot be shown
//	          safe, any other keyword changed, a version removed that
//	          status.storedVersions lists (every served one, when the old CRD
//	          has no status: a CRD read from a file)
//
// A new CEL rule is safe when no stored CR can fail it: a transition rule
// (it reads oldSelf outside a string literal) that holds for an unchanged
// value (`self == oldSelf`, `self.size >= oldSelf.size`, the rule of an
// optional @cueop(immutable) field; not `self == oldSelf && self.lo <=
// self.hi`, which refuses the next update of a stored CR with lo > hi), or a rule with no conditional (`?`) guarded by
// `!has(self.f) ||` for a field f the old schema did not have and that
// has no default (no stored CR has it: the API server pruned it, and fills
// no default on read). Any other new rule is breaking, as is a rule whose text changed (a message alone is safe). A
// rule that names a renamed field is compared under the new name, so a
// rename is one change. The status subtree is not compared: cueop
// computes status anew from the children at every reconcile.
//
// Count counts, for each breaking change, the stored CRs that set the field
// and those that hold its old default (the API server fills defaults on
// read, so a CR that relies on a default and one that sets the same value
// cannot be told apart). Refusal is the error that the operator, `cueop
// vet`, `cueop manifests` and `cueop diff` report.
//
// It must not read a cluster (package schemaguard does) nor refuse a
// revision itself: it says what changed, the caller refuses.
package schemacompat
