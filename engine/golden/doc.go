// Package golden runs the offline golden cases of a templates directory:
// testdata/<kind>/<case>.txtar, each with a parent.yaml, an optional
// observed.yaml (live children, matched to child ids by apiVersion, kind and
// name) and the expected children.yaml and/or status.yaml, or error.txt for
// a case that must fail. `cueop test` and the Go tests run this same code;
// with update set, the expected sections are rewritten from what the
// templates render now.
//
// It must not reach a cluster: a case is rendered, as Render renders it, and
// compared; nothing is applied.
package golden
