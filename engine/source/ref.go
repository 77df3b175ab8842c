package source

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/mod/semver"
)

// Scheme starts a module reference.
const Scheme = "oci://"

// Ref is a module reference: oci://<registry>/<module>@<query>[@<digest>].
type Ref struct {
	// Raw is the reference as given.
	Raw string
	// Registry is the registry host and optional repository prefix, as
	// CUE_REGISTRY takes it (host:port[/prefix][+insecure]; loopback
	// hosts are plain HTTP by default).
	Registry string
	// Module is the module path without a major version suffix; it starts
	// at the first element after the host that holds a dot.
	Module string
	// Query is a version (v1.2.0, a tag, followed) or a version prefix (v1
	// or v1.2: the newest release it starts, followed).
	Query string
	// Digest, when set (sha256:<hex>), pins the manifest: the reference
	// never moves. Query must then be a version.
	Digest string
}

// Pinned tells that the reference names one manifest digest.
func (r Ref) Pinned() bool { return r.Digest != "" }

// Exact tells that Query is a version rather than a prefix.
func (r Ref) Exact() bool { return semver.Canonical(r.Query) == r.Query }

// Dir is the directory of the reference's module in a layout, and the
// first element of its kinds' names: the module path's last element.
func (r Ref) Dir() string { return path.Base(r.Module) }

func (r Ref) String() string { return r.Raw }

// IsRefs tells whether a --templates value names modules rather than a
// directory: it starts with oci:// or @ (a file listing them).
func IsRefs(value string) bool {
	return strings.HasPrefix(value, Scheme) || strings.HasPrefix(value, "@")
}

// ParseRefs parses a --templates value: references separated by commas or
// newlines, and @file for a file holding them (one a line, # comments).
func ParseRefs(value string) ([]Ref, error) {
	var refs []Ref
	dirs := map[string]string{}
	var errs []error
	for _, item := range split(value) {
		items := []string{item}
		if file, ok := strings.CutPrefix(item, "@"); ok {
			data, err := os.ReadFile(file)
			if err != nil {
				errs = append(errs, fmt.Errorf("module references: %w", err))
				continue
			}
			items = split(stripComments(string(data)))
		}
		for _, it := range items {
			r, err := ParseRef(it)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if other, dup := dirs[r.Dir()]; dup {
				errs = append(errs, fmt.Errorf("module references %s and %s: both modules end in %q, which names their kinds: refused", other, r.Raw, r.Dir()))
				continue
			}
			dirs[r.Dir()] = r.Raw
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("module references %q: none given", value))
	}
	return refs, errors.Join(errs...)
}

// ParseRef parses one reference.
func ParseRef(s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("module reference %q: %s (want %shost[/prefix]/module@v1.2.0, @v1, or @v1.2.0@sha256:<hex>)", s, why, Scheme)
	}
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return bad("not " + Scheme)
	}
	loc, query, ok := strings.Cut(rest, "@")
	if !ok {
		return bad("no version")
	}
	r := Ref{Raw: s, Query: query}
	if q, d, ok := strings.Cut(query, "@"); ok {
		r.Query, r.Digest = q, d
		if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
			return bad("digest " + d + " is not sha256:<64 hex digits>")
		}
		if !r.Exact() {
			return bad("a digest needs a version (v1.2.0), not " + q)
		}
	}
	if !semver.IsValid(r.Query) || (!r.Exact() && semver.Prerelease(r.Query) != "") {
		return bad("version " + r.Query + " is not v<major>[.<minor>[.<patch>]]")
	}
	elems := strings.Split(loc, "/")
	for i := 1; i < len(elems); i++ {
		if strings.Contains(elems[i], ".") {
			r.Registry, r.Module = strings.Join(elems[:i], "/"), strings.Join(elems[i:], "/")
			break
		}
	}
	if r.Module == "" || elems[0] == "" {
		return bad("no registry host and module path (a module path starts with a domain, e.g. example.com/redis)")
	}
	return r, nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func stripComments(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l, _, _ = strings.Cut(l, "#")
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
