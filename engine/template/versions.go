package template

import (
	"errors"
	"fmt"
	"regexp"

	"cuelang.org/go/cue"
)

// versionName is a Kubernetes version: v1, v2beta1, v3alpha2.
var versionName = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)

// Version is one served version of a kind.
type Version struct {
	// Name is the version, such as v1 or v2beta1.
	Name string
	// Hub tells the hub: the version the template renders from, the
	// operator watches and the CRD stores.
	Hub bool
	// Spec and Status are the version's #Spec and #Status (the hub's
	// #Status when the spoke declares none; Status does not exist when
	// neither does).
	Spec, Status cue.Value
	// PrinterColumns and Scale are the version's, the hub's when the spoke
	// declares none.
	PrinterColumns []PrinterColumn
	Scale          *Scale
	// Deprecated and DeprecationWarning mark a version kubectl warns of.
	Deprecated         bool
	DeprecationWarning string
	// ToHub and FromHub are the spoke's conversions (versions.<name>.toHub
	// and .fromHub) with in.spec constrained by the version they read:
	// the spoke's #Spec for ToHub, the hub's for FromHub. They do not
	// exist on the hub.
	ToHub, FromHub cue.Value
	// ToHubDecl and FromHubDecl are the conversions as declared: their
	// positions and sources, for errors and the round-trip check.
	ToHubDecl, FromHubDecl cue.Value
}

// spokeFields are the decoded plain fields of a spoke.
type spokeFields struct {
	PrinterColumns     []PrinterColumn `json:"printerColumns,omitempty"`
	Scale              *Scale          `json:"scale,omitempty"`
	Deprecated         bool            `json:"deprecated,omitempty"`
	DeprecationWarning *string         `json:"deprecationWarning,omitempty"`
}

// decodeSpoke decodes the plain fields of the spoke v, each alone: the
// rest of v (#Spec, the conversions) is not concrete.
func decodeSpoke(v cue.Value) (spokeFields, error) {
	var f spokeFields
	fields := []struct {
		name string
		dst  any
	}{{"printerColumns", &f.PrinterColumns}, {"scale", &f.Scale}, {"deprecated", &f.Deprecated},
		{"deprecationWarning", &f.DeprecationWarning}}
	for _, d := range fields {
		x := v.LookupPath(cue.ParsePath(d.name))
		if !x.Exists() {
			continue
		}
		if err := x.Decode(d.dst); err != nil {
			return f, Positioned(err)
		}
	}
	if s := f.Scale; s != nil && (s.SpecReplicasPath == "" || s.StatusReplicasPath == "") {
		return f, errors.New("scale needs specReplicasPath and statusReplicasPath")
	}
	return f, nil
}

// Hub returns the hub version of k.
func (k *Kind) Hub() *Version {
	for i := range k.Versions {
		if k.Versions[i].Hub {
			return &k.Versions[i]
		}
	}
	return nil
}

// Version returns the served version name of k, or nil.
func (k *Kind) Version(name string) *Version {
	for i := range k.Versions {
		if k.Versions[i].Name == name {
			return &k.Versions[i]
		}
	}
	return nil
}

// loadVersions builds the hub from the kind's resource, #Spec and #Status
// and appends the spokes declared under versions, in name order, every
// error at once.
func loadVersions(v cue.Value, res Resource, spec, status cue.Value) ([]Version, error) {
	hub := Version{Name: res.Version, Hub: true, Spec: spec, Status: status,
		PrinterColumns: res.PrinterColumns, Scale: res.Scale}
	out := []Version{hub}
	vs := v.LookupPath(PathVersions)
	if !vs.Exists() {
		return out, nil
	}
	iter, err := vs.Fields()
	if err != nil {
		return nil, fmt.Errorf("%s: %s must be a struct of versions keyed by name: %w", vs.Pos(), PathVersions, Positioned(err))
	}
	var errs []error
	for iter.Next() {
		s, err := loadSpoke(iter.Selector().Unquoted(), iter.Value(), hub)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// loadSpoke checks and builds the spoke name declared as v.
func loadSpoke(name string, v cue.Value, hub Version) (Version, error) {
	where := fmt.Sprintf("%s: %s.%s", posOf(v), PathVersions, name)
	switch {
	case name == hub.Name:
		return Version{}, fmt.Errorf("%s: the hub version %s (resource.version) cannot be a spoke too", where, name)
	case !versionName.MatchString(name) || !dnsLabel.MatchString(name):
		return Version{}, fmt.Errorf("%s: version name %q must be a Kubernetes version such as v1, v2beta1 or v3alpha1", where, name)
	}
	spec := v.LookupPath(PathSpec)
	if !spec.Exists() || spec.IncompleteKind() != cue.StructKind {
		return Version{}, fmt.Errorf("%s: %s must be a struct: every version declares the schema of its spec", where, PathSpec)
	}
	f, err := decodeSpoke(v)
	if err != nil {
		return Version{}, fmt.Errorf("%s: %w", where, err)
	}
	s := Version{Name: name, Spec: spec, Status: hub.Status, PrinterColumns: hub.PrinterColumns, Scale: hub.Scale,
		Deprecated: f.Deprecated}
	if st := v.LookupPath(PathStatusDef); st.Exists() {
		s.Status = st
	}
	if f.PrinterColumns != nil {
		s.PrinterColumns = f.PrinterColumns
	}
	if f.Scale != nil {
		s.Scale = f.Scale
	}
	if f.DeprecationWarning != nil {
		s.DeprecationWarning = *f.DeprecationWarning
	}
	s.ToHubDecl, s.FromHubDecl = v.LookupPath(PathToHub), v.LookupPath(PathFromHub)
	if s.ToHub, err = conversion(where, v, PathToHub, spec); err != nil {
		return Version{}, err
	}
	if s.FromHub, err = conversion(where, v, PathFromHub, hub.Spec); err != nil {
		return Version{}, err
	}
	return s, nil
}

// conversion is the conversion at path of the spoke v with in.spec
// constrained by from, refused when it is missing or does not compile.
func conversion(where string, v cue.Value, path cue.Path, from cue.Value) (cue.Value, error) {
	c := v.LookupPath(path)
	if !c.Exists() {
		return c, fmt.Errorf("%s: %s is missing: every spoke converts to and from the hub", where, path)
	}
	if !c.LookupPath(PathOutSpec).Exists() {
		return c, fmt.Errorf("%s: %s.%s is missing: a conversion gives the converted spec", posOf(c), path, PathOutSpec)
	}
	c = c.FillPath(PathInSpec, from)
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%s: %s does not compile: %w", where, path, Positioned(err))
	}
	return c, nil
}
