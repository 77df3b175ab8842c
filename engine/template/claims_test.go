package template_test

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
)

// evilKind claims App's CRD name (apps.apps.test.example) as kind Evil.
const evilKind = `package app
resource: {group: "apps.test.example", version: "v1", kind: "Evil", plural: "apps"}
#Spec: {}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
`

// thirdKind is a kind of its own, claiming nothing of another.
const thirdKind = `package other
resource: {group: "apps.test.example", version: "v1", kind: "Other"}
#Spec: {}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "y"}
`

func kindNames(set *template.Set) string {
	var names []string
	for _, k := range set.Kinds {
		names = append(names, k.Name)
	}
	return strings.Join(names, " ")
}

// TestLoadRefusesDuplicateCRDName: two packages of different kinds
// claiming one CRD name (plural.group) are refused, each naming both,
// and the other kinds load: neither holds it, and load order gives no
// kind its name (nor the ServiceAccount named after it), as offline
// `cueop vet` loads.
func TestLoadRefusesDuplicateCRDName(t *testing.T) {
	dir := writeTemplates(t, map[string]string{"app/app.cue": okKind, "evil/evil.cue": evilKind, "other/other.cue": thirdKind})
	set, err := template.Load(dir)
	if err == nil || !strings.Contains(err.Error(), "CRD apps.apps.test.example: defined by both app and evil") {
		t.Fatalf("error = %v, want the CRD name claimed by both app and evil", err)
	}
	if got := kindNames(set); got != "other" {
		t.Errorf("kinds = %s, want other alone", got)
	}
	for _, pkg := range []string{"app", "evil"} {
		if e := set.Broken[pkg]; e == nil || !strings.Contains(e.Error(), "package "+pkg+" (resource at ") || !strings.Contains(e.Error(), pkg+".cue:2:") {
			t.Errorf("Broken[%s] = %v, want the refusal at its resource's position", pkg, e)
		}
	}
}

// TestLoadClaimKeptByHolder: the package holding a CRD name keeps it (it
// serves it, or the CRD in the cluster was applied for it); a second
// package claiming it is refused naming both, and the holder's Claims
// name the refused one.
func TestLoadClaimKeptByHolder(t *testing.T) {
	dir := writeTemplates(t, map[string]string{"app/app.cue": okKind, "evil/evil.cue": evilKind})
	app := template.Holding{Package: "app", Kind: "App.apps.test.example", CRD: "apps.apps.test.example"}
	for name, h := range map[string]template.Holding{
		"served":              app,
		"CRD without package": {Kind: app.Kind, CRD: app.CRD},
	} {
		t.Run(name, func(t *testing.T) {
			set, err := template.LoadWith(dir, template.LoadOptions{Holders: func(kindID, crdName string) []template.Holding {
				if h.Kind == kindID || h.CRD == crdName {
					return []template.Holding{h}
				}
				return nil
			}})
			if err == nil || !strings.Contains(err.Error(), "CRD apps.apps.test.example: claimed by both app and evil: app keeps it") {
				t.Fatalf("error = %v, want evil refused, app keeping the CRD", err)
			}
			if got := kindNames(set); got != "app" {
				t.Errorf("kinds = %s, want app", got)
			}
			if set.Broken["evil"] == nil || set.Broken["app"] != nil {
				t.Errorf("Broken = %v, want evil alone", set.Broken)
			}
			if c := set.Claims["app"]; c == nil || !strings.Contains(c.Error(), "also claimed by evil, refused") {
				t.Errorf("Claims[app] = %v, want evil named", c)
			}
		})
	}
}

// TestLoadModuleClaimingAnothersKind: a module version declaring a kind
// another module holds is refused for that kind alone: the holder serves,
// the claimant's other kinds serve, and the error names both modules.
// Without a holder (nothing served, no CRD) both are refused, and the
// rest still loads: no module blocks every other.
func TestLoadModuleClaimingAnothersKind(t *testing.T) {
	root := testkit.Dir(t, map[string]string{
		template.ModulesFile: `[{"dir": "redis", "source": {"ref": "oci://r.test/test.example/redis@v1", "module": "test.example/redis@v1", "version": "v1.1.0", "digest": "sha256:aa"}},
{"dir": "evil", "source": {"ref": "oci://r.test/test.example/evil@v1", "module": "test.example/evil@v1", "version": "v1.0.1", "digest": "sha256:bb"}}]`,
		"redis/cue.mod/module.cue": testkit.ModuleFile("test.example/redis@v1"),
		"redis/app/app.cue":        okKind,
		"evil/cue.mod/module.cue":  testkit.ModuleFile("test.example/evil@v1"),
		"evil/app/app.cue":         okKind,
		"evil/other/other.cue":     thirdKind,
	})
	held := func(kindID, crdName string) []template.Holding {
		if kindID == "App.apps.test.example" || crdName == "apps.apps.test.example" {
			return []template.Holding{{Package: "redis/app", Kind: "App.apps.test.example", CRD: "apps.apps.test.example"}}
		}
		return nil
	}
	set, err := template.LoadWith(root, template.LoadOptions{Holders: held})
	if err == nil || !strings.Contains(err.Error(), "module test.example/evil@v1.0.1 (sha256:bb): package evil/app (resource at test.example/evil@v1.0.1:app/app.cue:2:55): kind App.apps.test.example: claimed by both redis/app (module test.example/redis@v1.1.0 (sha256:aa)) and evil/app") {
		t.Fatalf("error = %v, want evil/app refused naming both modules", err)
	}
	if got := kindNames(set); got != "evil/other redis/app" {
		t.Errorf("kinds = %s, want evil/other redis/app", got)
	}

	set, err = template.Load(root)
	if err == nil || !strings.Contains(err.Error(), "defined by both evil/app (module test.example/evil@v1.0.1 (sha256:bb)) and redis/app") {
		t.Fatalf("error = %v, want both refused", err)
	}
	if got := kindNames(set); got != "evil/other" {
		t.Errorf("kinds = %s, want evil/other", got)
	}
}
