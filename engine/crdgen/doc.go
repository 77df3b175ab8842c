// Package crdgen turns a kind into its apiextensions.k8s.io/v1
// CustomResourceDefinition. It is a pure stage of the pipeline: values in
// (the kind's resource, #Spec and #Status), a CRD out, no client. `cueop crd`,
// `cueop vet` and the controller's --install-crds all call Generate, so the
// CRD checked in under crds/ is the CRD the controller installs.
//
// # Schema
//
// Schema walks a cue.Value (its kind, default, doc comments, fields and
// the expression tree of its constraints) and writes a structural OpenAPI
// v3 schema. It does not use encoding/openapi, which cannot express
// bounded numbers, `_`, `{...}` or `int | string` as the API server wants
// them. The mapping:
//
//	int, number, float          type integer, number (int32 and int64 ranges add their format)
//	string, bool, bytes         type string, boolean, string with format byte
//	>=1 & <=10, >0, <100        minimum, maximum, exclusiveMinimum, exclusiveMaximum
//	=~"re", !~"re", !="x"       pattern, not: {pattern}, not: {enum}
//	strings.MinRunes/MaxRunes   minLength, maxLength
//	list.MinItems/MaxItems      minItems, maxItems
//	struct.MinFields/MaxFields  minProperties, maxProperties
//	time.Time                   format date-time
//	"a" | "b", 1 | 2            enum
//	>5 | <1, "a" | =~"^x-"      anyOf (alternatives of one type)
//	int | string                x-kubernetes-int-or-string (bounds on the int side,
//	                            patterns or literals on the string side)
//	null | T                    nullable
//	*v | T                      default (regular fields only)
//	{a: T, b?: T, c!: T}        properties; required: c, and a unless a is concrete
//	[string]: T                 additionalProperties
//	{...}, [string]: _          type object, x-kubernetes-preserve-unknown-fields
//	_                           x-kubernetes-preserve-unknown-fields
//	[...T]                      type array, items
//	// comments                 description
//
// Required and default follow CUE: a regular field (`a: T`) that is not
// concrete must be given, so it is required; one that is concrete (it has a
// default, or a fixed value) is not, and its value becomes the schema's
// default, so the API server fills in what CUE would. A struct field gets
// the default `{}` (its fields bring their own defaults), a list default is
// written only when it is not empty. Optional (`a?:`) and required
// (`a!:`) fields get no default: CUE leaves an absent optional field
// absent, and a required one must be given.
//
// What a structural schema cannot express is refused with a *SchemaError
// naming the field (#Spec.a.b) and the CUE position (file:line:column):
// lists with fixed elements (`[int, string]`), pattern constraints on some
// field names (`[=~"^x"]: T`), structs with both fields and `[string]: T`,
// disjunctions of structs whose shared fields differ, of several lists or
// of types other than int and string, bounds that are not concrete numbers
// or fields, arithmetic, interpolation and builtin validators other than
// those above. Bounds beyond the int64
// range (those of float64, uint64) are dropped, because the API server
// compares integers with a bound converted to int64, which overflows.
//
// # CEL rules
//
// What #Spec says that an OpenAPI schema cannot becomes CEL rules
// (x-kubernetes-validations), so that the API server refuses at admission
// what render would refuse (specRules, Explain):
//
//	b: int & <=a (<, >, >=, !=)    on the nearest common parent of a and b:
//	                               self.b <= self.a, guarded by has() where b may be absent
//	l: [...T] & list.UniqueItems()  on l: self.all(x, self.exists_one(y, y == x))
//	f: T @cueop(immutable)         on f: self == oldSelf; for an optional f, a rule on
//	                               its parent that also refuses setting or removing it
//	if a == "x" {f!: T}            on the struct: (self.a == "x") == has(self.f), and f
//	                               in the schema (for an optional f: ... || !has(self.f))
//	{a!: T} | {b!: U}              the fields of both in the schema, and a rule that the
//	                               object has the fields of exactly one alternative
//
// Each rule is compiled and its cost estimated by the API server's CRD
// validation when the CRD is built; a refused rule is left out and its
// constraint stays render-only, with the API server's reason. So do bounds
// by fields within lists or maps, by values outside #Spec, and bounds in
// disjunctions. Explain returns every such constraint.
//
// # CRD
//
// FromResource (and Generate, for a template.Kind) builds the CRD around the
// schemas: name <plural>.<group>, namespaced, one served and stored version,
// the status subresource, the scale subresource when the resource names its
// replica paths, printer columns (Ready and, at priority 1, Reason of the
// Ready condition when the author gives none; Age always), the categories
// "cueop" and the author's, the label app.kubernetes.io/managed-by=cueop and
// the annotation cueop.dev/revision. .spec defaults to `{}` when #Spec has
// no required fields, so a resource without a spec gets the spec's
// defaults; .status holds #Status (without required fields: the engine may
// write its conditions alone) plus observedGeneration, conditions
// (metav1.Condition, a map list keyed by type) and revision.
//
// Validate checks a CRD with the API server's own code: CRD validation
// (names, versions, schema, defaults, printer columns) and the structural
// schema invariants. Generate does not call it; callers do.
//
// # Bounds
//
// Bounds lists the bounds of a CRD's spec schema (maximum, maxLength,
// maxItems, maxProperties) with the value that puts each at its limit,
// items of a list or map at their own limits (AtLimits): what the API
// server accepts at most, which `cueop vet` renders to prove the template
// takes it within the render budget.
//
// It must not apply a CRD nor judge a change to one (packages schemacompat
// and schemaguard).
package crdgen
