package template

import "cuelang.org/go/cue"

// PathVersions is where a kind declares the spokes it serves besides its
// hub: versions: <name>: {#Spec, #Status?, printerColumns?, scale?,
// deprecated?, deprecationWarning?, toHub, fromHub}.
var PathVersions = cue.ParsePath("versions")

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
	// ToHub and FromHub are the spoke's conversions (the value declared
	// at versions.<name>.toHub and .fromHub); they do not exist on the hub.
	ToHub, FromHub cue.Value
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
// and appends the spokes declared under versions.
func loadVersions(v cue.Value, res Resource, spec, status cue.Value) ([]Version, error) {
	hub := Version{Name: res.Version, Hub: true, Spec: spec, Status: status,
		PrinterColumns: res.PrinterColumns, Scale: res.Scale}
	return []Version{hub}, nil
}
