// Package source fetches templates shipped as CUE modules from an OCI
// registry, CUE's own module protocol, and lays them out as a templates
// directory that the operator loads and hot-reloads as it does a mounted
// ConfigMap.
//
// A reference (ref.go) names a registry, a module and a version:
// oci://host[/prefix]/module@v1.2.0 follows the tag v1.2.0, @v1 or @v1.2
// the newest release of that prefix, and @v1.2.0@sha256:<hex> one manifest
// digest, never left. Fetching (remote.go) bounds every download before
// reading it: the manifest, the module file and the archive, whose size
// the manifest states. A module version is extracted (cache.go) into
// modules/sha256/<hex> under the module cache, content-addressed by its
// manifest digest, each file within template.Limits; its dependencies are
// those CUE's own loader asks for (deps.go), fetched the same way.
//
// The modules are laid out (layout.go) in trees/<hash>, one subdirectory
// per reference with its dependencies in cue.mod/deps, and served through
// the symlink templates/..data, swapped atomically like a ConfigMap
// volume's: the operator watching templates/ reloads each new layout on
// its existing path (contract, schema guard, versions and conversion
// checks), and a refused kind keeps its last good revision serving. A
// template load never reaches the network: it reads the layout only.
//
// The digests resolved are recorded in pinned.json (pinned.go), and, with
// Options.Record, in the cluster too (record.go; a ConfigMap: package
// pinstore), where the record outlives a module cache on an emptyDir and
// wins over the file: a pin's dependencies are those its first fetch
// resolved, whichever Pod fetches it next. A start
// serves the recorded digest of each reference when its files are cached,
// without asking the registry; a moving reference is then followed from
// the first poll, made right away, and at every poll interval. A poll that
// fails (the registry gone, a module over the limits) is logged and
// retried; what serves is left as it is.
//
// It must not load or compile templates (package template) nor decide what
// serves: it writes a directory, which the operator loads.
package source
