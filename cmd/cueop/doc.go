// Command cueop is a Kubernetes operator driven by CUE templates. Each
// subcommand lives in a file of its own and only parses flags and calls the
// engine packages.
//
// It must not hold engine logic: what a subcommand needs beyond its flags
// and its output belongs in an engine package, where the operator and the
// tests reach it too.
package main
