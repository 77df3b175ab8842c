// Package kschema checks objects against the schemas of Kubernetes' built-in
// kinds, the same structured-merge-diff schemas the API server uses for
// server-side apply. `cueop vet` uses it to catch a misspelt field offline;
// the applier uses it to compare desired and live objects field by field.
//
// It must not reach an API server: the schemas are those compiled into
// client-go, so a kind they do not hold is ErrUnknownKind.
package kschema
