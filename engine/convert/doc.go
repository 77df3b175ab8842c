// Package convert converts the objects of one kind between its served
// versions with the conversions the kind's template declares in CUE
// (versions: <name>: toHub, fromHub). A conversion between two spokes goes
// through the hub. metadata and cueop's own status fields pass unchanged;
// the converted spec is unified with the target version's #Spec, so that
// defaults are filled and a result the target schema refuses is an error
// naming the field and its CUE position. A field the target version lacks
// is carried in the annotation cueop.dev/conversion.<version> and restored
// on the way back (lossless round trips): the fields that do not come back
// alone, and a conversion whose annotations would pass the API server's
// 256 KiB is refused (AnnotationTooLargeError). Every conversion is evaluated
// within a budget (package budget), as a render is.
//
// It must not reach an API server, serve the webhook (package webhook) or
// decide which conversions serve (package operator): objects in, objects
// out.
package convert
