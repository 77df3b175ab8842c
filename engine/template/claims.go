package template

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// A kind's identity is its Kind.group and its CRD name (plural.group):
// the CRD the operator applies, the ServiceAccount it acts as
// (engine/identity names it by the CRD name) and the Template it reports
// on all follow from them. Each is claimed by one package of a load: a
// second package claiming either is refused (it is Broken, with an error
// naming both), and never changes what the first one serves or the
// identity it acts as. Who keeps a claim:
//
//  1. the package holding it already (LoadOptions.Holders: the package
//     serving it, or the one the CRD in the cluster was applied for),
//     while that package is still among the templates, loaded or broken;
//  2. else the one claimant that is established: its Kind.group and CRD
//     name are those of a CRD already in the cluster, applied for it or for
//     a package no longer among the templates (the API server would refuse
//     the other's CRD: spec.names.kind is immutable);
//  3. else a sole claimant;
//  4. else nobody: every claimant is refused, since neither is
//     established and load order is no reason to give one a kind.
//
// Modules are no different: a module version claiming a kind another
// module serves is refused for its own kinds only (ModulesFile), and a
// fresh operator finds the holder on the CRD.

// Holding is a claim already held: a package serving a kind, or a CRD in
// the cluster.
type Holding struct {
	// Package is the kind's package (Kind.Name) serving it or recorded on
	// its CRD; empty when not known (a CRD that cueop did not apply).
	Package string
	// Kind is its Kind.group and CRD its CRD name (plural.group).
	Kind, CRD string
}

// Holders answers who holds a kind's claims: the holdings whose Kind is
// kindID or whose CRD is crdName, nil when none.
type Holders func(kindID, crdName string) []Holding

// claim is one of a kind's two identities.
type claim struct {
	what, key string // "kind" Kind.group, or "CRD" plural.group
}

func claimsOf(k *Kind) []claim {
	return []claim{{"kind", k.Resource.ID()}, {"CRD", k.Resource.CRDName()}}
}

func (c claim) held(h Holding) bool {
	if c.what == "kind" {
		return h.Kind == c.key
	}
	return h.CRD == c.key
}

// resolveClaims leaves in set.Kinds one package per claim, moving each
// refused claimant to set.Broken; it returns the refusals.
func resolveClaims(set *Set, holders Holders) error {
	present := map[string]bool{}
	for _, k := range set.Kinds {
		present[k.Name] = true
	}
	inSet := func(pkg string) bool {
		if present[pkg] || set.Broken[pkg] != nil {
			return true
		}
		dir, _, ok := strings.Cut(pkg, "/") // a module broken as a whole
		return ok && set.Broken[dir] != nil
	}
	claimants := map[claim][]*Kind{}
	var order []claim
	for _, k := range set.Kinds {
		for _, c := range claimsOf(k) {
			if claimants[c] == nil {
				order = append(order, c)
			}
			claimants[c] = append(claimants[c], k)
		}
	}
	// The holdings, asked about once per kind.
	asked := map[*Kind][]Holding{}
	holdings := func(k *Kind) []Holding {
		if holders == nil {
			return nil
		}
		if h, ok := asked[k]; ok {
			return h
		}
		h := holders(k.Resource.ID(), k.Resource.CRDName())
		asked[k] = h
		return h
	}
	refused := map[string][]string{}
	kept := map[string][]string{} // the keeper's view of each refusal
	for _, c := range order {
		ks := claimants[c]
		// 1. A package holding the claim, still among the templates.
		holder := ""
		for _, k := range ks {
			for _, h := range holdings(k) {
				if c.held(h) && h.Package != "" && inSet(h.Package) {
					holder = h.Package
				}
			}
		}
		if holder != "" {
			for _, k := range ks {
				if k.Name != holder {
					refused[k.Name] = append(refused[k.Name], fmt.Sprintf("%s %s: claimed by both %s and %s: %s keeps it (it serves it, or its CRD was applied for it), %s is refused",
						c.what, c.key, describeKind(set, holder), describeKind(set, k.Name), holder, k.Name))
					kept[holder] = append(kept[holder], fmt.Sprintf("%s %s: also claimed by %s, refused", c.what, c.key, describeKind(set, k.Name)))
				}
			}
			continue
		}
		if len(ks) < 2 {
			continue
		}
		// 2. The one claimant whose identity a CRD in the cluster has.
		var established []*Kind
		for _, k := range ks {
			for _, h := range holdings(k) {
				if h.Kind == k.Resource.ID() && h.CRD == k.Resource.CRDName() && (h.Package == "" || h.Package == k.Name || !inSet(h.Package)) {
					established = append(established, k)
					break
				}
			}
		}
		if len(established) == 1 {
			keep := established[0]
			for _, k := range ks {
				if k != keep {
					refused[k.Name] = append(refused[k.Name], fmt.Sprintf("%s %s: claimed by both %s and %s: %s keeps it (the CRD %s in the cluster is its kind %s), %s is refused",
						c.what, c.key, describeKind(set, keep.Name), describeKind(set, k.Name), keep.Name, keep.Resource.CRDName(), keep.Resource.ID(), k.Name))
					kept[keep.Name] = append(kept[keep.Name], fmt.Sprintf("%s %s: also claimed by %s, refused", c.what, c.key, describeKind(set, k.Name)))
				}
			}
			continue
		}
		// 4. Neither established: every claimant refused.
		names := make([]string, len(ks))
		for i, k := range ks {
			names[i] = describeKind(set, k.Name)
		}
		for _, k := range ks {
			refused[k.Name] = append(refused[k.Name], fmt.Sprintf("%s %s: defined by both %s: none of them holds it (serves it, or is the kind of its CRD in the cluster), so each is refused (remove or rename all but one)",
				c.what, c.key, strings.Join(names, " and ")))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	for pkg, why := range kept {
		if set.Claims == nil {
			set.Claims = map[string]error{}
		}
		set.Claims[pkg] = fmt.Errorf("package %s: %s", pkg, strings.Join(why, "; "))
	}
	var keep []*Kind
	var errs []error
	for _, k := range set.Kinds {
		why, ok := refused[k.Name]
		if !ok {
			keep = append(keep, k)
			continue
		}
		err := fmt.Errorf("package %s (resource at %s): %s", k.Name, resourcePos(k), strings.Join(why, "; "))
		if k.Source.Module != "" {
			err = fmt.Errorf("module %s: %w", k.Source.Describe(), err)
		}
		set.Broken[k.Name] = err
		errs = append(errs, err)
	}
	set.Kinds = keep
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// describeKind names the package pkg of set with its module, when it came
// from one.
func describeKind(set *Set, pkg string) string {
	for _, k := range set.Kinds {
		if k.Name == pkg && k.Source.Module != "" {
			return pkg + " (module " + k.Source.Describe() + ")"
		}
	}
	return pkg
}

// resourcePos is where k declares its resource: the file:line:column of
// its kind, or of the resource when that is not found.
func resourcePos(k *Kind) string {
	v := k.Value.LookupPath(PathResourceKind)
	if !v.Exists() {
		v = k.Value.LookupPath(PathResource)
	}
	p := v.Pos()
	if !p.IsValid() {
		return "unknown position"
	}
	return fmt.Sprintf("%s:%d:%d", DisplayName(p.Filename()), p.Line(), p.Column())
}
