package template_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
)

const v2Spoke = `
versions: v2: {
	#Spec: {size: *1 | int}
	toHub: {in: spec: _, out: spec: replicas: in.spec.size}
	fromHub: {in: spec: _, out: spec: size: in.spec.replicas}
}
`

func TestLoadVersions(t *testing.T) {
	set, err := template.Load(writeTemplates(t, map[string]string{"app/app.cue": okKind + v2Spoke}))
	if err != nil {
		t.Fatal(err)
	}
	k := set.Kinds[0]
	if len(k.Versions) != 2 || !k.Versions[0].Hub || k.Versions[0].Name != "v1" || k.Versions[1].Name != "v2" || k.Hub() != &k.Versions[0] {
		t.Fatalf("versions = %+v, want the hub v1 then v2", k.Versions)
	}
	if v := k.Version("v2"); v == nil || !v.ToHub.Exists() || !v.FromHub.Exists() || !v.Spec.Exists() {
		t.Errorf("v2 = %+v, want its spec and conversions", v)
	}
	one, err := template.Load(writeTemplates(t, map[string]string{"app/app.cue": okKind}))
	if err != nil || len(one.Kinds[0].Versions) != 1 {
		t.Errorf("a kind with one version: %v, %+v", err, one.Kinds[0].Versions)
	}
}

func TestLoadRefusesBadVersions(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"spoke named like the hub": {strings.Replace(v2Spoke, "versions: v2", "versions: v1", 1), "the hub version v1 (resource.version) cannot be a spoke too"},
		"bad version name":         {strings.Replace(v2Spoke, "versions: v2", `versions: "version2"`, 1), `version name "version2" must be a Kubernetes version`},
		"missing toHub":            {strings.Replace(v2Spoke, "toHub:", "toHubb:", 1), "toHub is missing"},
		"missing fromHub out.spec": {strings.Replace(v2Spoke, "out: spec: size:", "out: size:", 1), "fromHub.out.spec is missing"},
		"conversion does not compile": {strings.Replace(v2Spoke, "in.spec.replicas", "in.spec.replica", 1),
			"fromHub does not compile"},
		"spec not a struct": {strings.Replace(v2Spoke, "#Spec: {size: *1 | int}", "#Spec: 3", 1), "#Spec must be a struct"},
	} {
		t.Run(name, func(t *testing.T) {
			loadRefused(t, okKind+tc.src, tc.want)
		})
	}
}
