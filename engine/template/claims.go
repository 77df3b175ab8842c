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
	r := newClaimResolution(set, holders)
	claimants, order := claimantsOf(set)
	for _, c := range order {
		r.resolve(c, claimants[c])
	}
	return r.apply()
}

// claimantsOf are the kinds of set claiming each claim, and the claims in
// the order of set.Kinds.
func claimantsOf(set *Set) (map[claim][]*Kind, []claim) {
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
	return claimants, order
}

// claimResolution is the work of resolveClaims: the packages of the set,
// the holdings asked (once per kind), and the refusals found, with the
// keeper's view of each (kept).
type claimResolution struct {
	set     *Set
	holders Holders
	present map[string]bool
	asked   map[*Kind][]Holding
	refused map[string][]string
	kept    map[string][]string
}

func newClaimResolution(set *Set, holders Holders) *claimResolution {
	r := &claimResolution{
		set: set, holders: holders, present: map[string]bool{},
		asked: map[*Kind][]Holding{}, refused: map[string][]string{}, kept: map[string][]string{},
	}
	for _, k := range set.Kinds {
		r.present[k.Name] = true
	}
	return r
}

// inSet is whether the package pkg is among the templates, loaded or
// broken.
func (r *claimResolution) inSet(pkg string) bool {
	if r.present[pkg] || r.set.Broken[pkg] != nil {
		return true
	}
	dir, _, ok := strings.Cut(pkg, "/") // a module broken as a whole
	return ok && r.set.Broken[dir] != nil
}

// holdings are the holdings of k's claims, asked about once per kind.
func (r *claimResolution) holdings(k *Kind) []Holding {
	if r.holders == nil {
		return nil
	}
	if h, ok := r.asked[k]; ok {
		return h
	}
	h := r.holders(k.Resource.ID(), k.Resource.CRDName())
	r.asked[k] = h
	return h
}

// resolve finds who keeps the claim c of the claimants ks, by the rules
// above, and refuses the others.
func (r *claimResolution) resolve(c claim, ks []*Kind) {
	// 1. A package holding the claim, still among the templates.
	if holder := r.holder(c, ks); holder != "" {
		for _, k := range ks {
			if k.Name != holder {
				r.refuse(k.Name, fmt.Sprintf("%s %s: claimed by both %s and %s: %s keeps it (it serves it, or its CRD was applied for it), %s is refused",
					c.what, c.key, describeKind(r.set, holder), describeKind(r.set, k.Name), holder, k.Name), holder, c)
			}
		}
		return
	}
	if len(ks) < 2 {
		return
	}
	// 2. The one claimant whose identity a CRD in the cluster has.
	if established := r.established(ks); len(established) == 1 {
		keep := established[0]
		for _, k := range ks {
			if k != keep {
				r.refuse(k.Name, fmt.Sprintf("%s %s: claimed by both %s and %s: %s keeps it (the CRD %s in the cluster is its kind %s), %s is refused",
					c.what, c.key, describeKind(r.set, keep.Name), describeKind(r.set, k.Name), keep.Name, keep.Resource.CRDName(), keep.Resource.ID(), k.Name), keep.Name, c)
			}
		}
		return
	}
	// 4. Neither established: every claimant refused.
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = describeKind(r.set, k.Name)
	}
	for _, k := range ks {
		r.refused[k.Name] = append(r.refused[k.Name], fmt.Sprintf("%s %s: defined by both %s: none of them holds it (serves it, or is the kind of its CRD in the cluster), so each is refused (remove or rename all but one)",
			c.what, c.key, strings.Join(names, " and ")))
	}
}

// refuse records the refusal of the claim c to the package pkg, why, and
// the keeper's view of it.
func (r *claimResolution) refuse(pkg, why, keeper string, c claim) {
	r.refused[pkg] = append(r.refused[pkg], why)
	r.kept[keeper] = append(r.kept[keeper], fmt.Sprintf("%s %s: also claimed by %s, refused", c.what, c.key, describeKind(r.set, pkg)))
}

// holder is the package holding the claim c of ks that is still among the
// templates (the last one the holdings name), empty when none.
func (r *claimResolution) holder(c claim, ks []*Kind) string {
	holder := ""
	for _, k := range ks {
		for _, h := range r.holdings(k) {
			if c.held(h) && h.Package != "" && r.inSet(h.Package) {
				holder = h.Package
			}
		}
	}
	return holder
}

// established are the kinds of ks whose Kind.group and CRD name are
// those of a CRD in the cluster, applied for it, for no known package or
// for one no longer among the templates.
func (r *claimResolution) established(ks []*Kind) []*Kind {
	var established []*Kind
	for _, k := range ks {
		for _, h := range r.holdings(k) {
			if h.Kind == k.Resource.ID() && h.CRD == k.Resource.CRDName() && (h.Package == "" || h.Package == k.Name || !r.inSet(h.Package)) {
				established = append(established, k)
				break
			}
		}
	}
	return established
}

// apply records the refusals in the set: each keeper's view in
// set.Claims, each refused package moved from set.Kinds to set.Broken. It
// returns the refusals, in order of their text.
func (r *claimResolution) apply() error {
	set := r.set
	if len(r.refused) == 0 {
		return nil
	}
	for pkg, why := range r.kept {
		if set.Claims == nil {
			set.Claims = map[string]error{}
		}
		set.Claims[pkg] = fmt.Errorf("package %s: %s", pkg, strings.Join(why, "; "))
	}
	var keep []*Kind
	var errs []error
	for _, k := range set.Kinds {
		why, ok := r.refused[k.Name]
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
