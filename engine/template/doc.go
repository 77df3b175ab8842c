// Package template loads a templates directory (or one package of it) and
// compiles each CUE package into an immutable Kind: its resource, #Spec and
// #Status, the optional parts of the contract it uses (policies,
// references, waves and readyWhen, conditions, versions and their
// conversions) and what its outputs read of the observed children. Every
// CUE path of the template contract the Go code reads or fills is named
// once, in contractpaths.go. A template that breaks the contract, or the
// limits of a load (limits.go), is refused with its CUE file:line:column.
//
// It must not render a CR (package render), reach a cluster, or decide
// what serves: a kind that does not compile is reported Broken, and the
// operator keeps the last good one.
package template
