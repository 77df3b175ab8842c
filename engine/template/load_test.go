package template_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
	_ "github.com/cueop/cueop/internal/update"
)

// writeTemplates makes a templates module with the files of files (slash
// path: content).
var writeTemplates = testkit.Templates

const okKind = `package app
resource: {group: "apps.test.example", version: "v1", kind: "App"}
#Spec: {replicas: *1 | int}
parent: spec: #Spec
children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}
`

func TestLoadProjectTemplates(t *testing.T) {
	set, err := template.Load("../../templates")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range set.Kinds {
		names = append(names, k.Name+"="+k.Resource.GroupVersionKind().String())
		if len(k.Revision) != 10 {
			t.Errorf("kind %s: revision %q, want 10 hex digits", k.Name, k.Revision)
		}
	}
	want := "blog=blog.example.com/v1, Kind=Blog rediscluster=cache.example.com/v1, Kind=RedisCluster staticsite=web.example.com/v1, Kind=StaticSite webapp=apps.example.com/v1, Kind=WebApp"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("kinds = %s, want %s", got, want)
	}
	if k := set.Lookup("cache.example.com", "RedisCluster"); k == nil || k.Resource.Plural != "redisclusters" {
		t.Errorf("Lookup(RedisCluster) = %+v", k)
	}
}

func TestLoadDefaultsAndHelpers(t *testing.T) {
	dir := writeTemplates(t, map[string]string{
		"app/app.cue":  okKind,
		"lib/lib.cue":  "package lib\n#Labels: [string]: string\n",
		"policy/x.cue": "package policy\nresource: {group: \"p.test.example\", version: \"v1alpha1\", kind: \"Policy\"}\n#Spec: {}\nchildren: {}\n",
	})
	set, err := template.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Kinds) != 2 {
		t.Fatalf("got %d kinds, want 2 (lib is a helper)", len(set.Kinds))
	}
	r := set.Kinds[1].Resource
	if r.Plural != "policies" || r.Singular != "policy" {
		t.Errorf("plural/singular = %s/%s, want policies/policy", r.Plural, r.Singular)
	}
}

func TestRevisionChangesWithEveryFile(t *testing.T) {
	dir := writeTemplates(t, map[string]string{"app/app.cue": okKind, "app/extra.txt": "a"})
	first := loadRevision(t, dir)
	if again := loadRevision(t, dir); again != first {
		t.Fatalf("revision not stable: %s then %s", first, again)
	}
	testkit.Write(t, dir, map[string]string{"app/extra.txt": "b"})
	if loadRevision(t, dir) == first {
		t.Error("editing a file of the kind did not change its revision")
	}
}

func loadRevision(t *testing.T, dir string) string {
	t.Helper()
	set, err := template.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set.Kinds[0].Revision
}

var position = regexp.MustCompile(`app\.cue:\d+:\d+`)

// loadRefused loads a templates directory whose one kind, app/app.cue, is
// src, and fails the test unless Load refuses it with an error that says
// want and names an app.cue:line:column position.
func loadRefused(t *testing.T, src, want string) {
	t.Helper()
	_, err := template.Load(writeTemplates(t, map[string]string{"app/app.cue": src}))
	if err == nil {
		t.Fatal("Load succeeded, want an error")
	}
	if !strings.Contains(err.Error(), want) || !position.MatchString(err.Error()) {
		t.Errorf("error %q lacks %q or app.cue:line:column", err, want)
	}
}

func TestLoadRefusesBrokenContracts(t *testing.T) {
	for name, tc := range map[string]struct {
		src, want string
		noPos     bool
	}{
		"syntax error":        {src: okKind + "children: {\n", want: "expected"},
		"type conflict":       {src: okKind + "#Spec: replicas: \"three\"\n", want: "conflicting values"},
		"missing kind":        {src: strings.Replace(okKind, `, kind: "App"`, "", 1), want: "kind \"\" must be CamelCase"},
		"bad group":           {src: strings.Replace(okKind, "apps.test.example", "Apps", 1), want: "must be a DNS subdomain"},
		"no spec":             {src: strings.Replace(strings.Replace(okKind, "#Spec: {replicas: *1 | int}", "", 1), "parent: spec: #Spec", "", 1), want: "#Spec is missing"},
		"no children":         {src: strings.Replace(okKind, "children:", "kids:", 1), want: "children is missing"},
		"children not struct": {src: strings.Replace(okKind, `children: cm: {apiVersion: "v1", kind: "ConfigMap", metadata: name: "x"}`, `children: [1, 2]`, 1), want: "must be a struct of objects"},
		"tool/exec import":    {src: strings.Replace(okKind, "package app", "package app\nimport \"tool/exec\"\n_x: exec.Run", 1), want: `import of "tool/exec" refused`},
		"tool/http import":    {src: strings.Replace(okKind, "package app", "package app\nimport \"tool/http\"\n_x: http.Get", 1), want: `import of "tool/http" refused`},
		"ready not bool":      {src: okKind + "ready: \"yes\"\n", want: "ready must be a bool"},
	} {
		t.Run(name, func(t *testing.T) {
			loadRefused(t, tc.src, tc.want)
		})
	}
}

// TestLoadAcceptsReadyOfRequiredField: ready reads a required spec field
// with bounds, incomplete on the abstract package but a bool in every
// render of a concrete CR.
func TestLoadAcceptsReadyOfRequiredField(t *testing.T) {
	for _, spec := range []string{"replicas!: int & >=1 & <=10", "replicas: int & >=1 & <=10"} {
		src := strings.Replace(okKind, "#Spec: {replicas: *1 | int}", "#Spec: {"+spec+"}", 1) + "ready: parent.spec.replicas >= 1\n"
		if _, err := template.Load(writeTemplates(t, map[string]string{"app/app.cue": src})); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

func TestLoadRefusesToolImportThroughHelper(t *testing.T) {
	dir := writeTemplates(t, map[string]string{
		"app/app.cue": strings.Replace(okKind, "package app", "package app\nimport \"test.example/t/lib\"\n_l: lib.x", 1),
		"lib/lib.cue": "package lib\nimport \"tool/exec\"\nx: exec.Run & {cmd: \"true\"}\n",
	})
	_, err := template.Load(dir)
	if err == nil || !strings.Contains(err.Error(), `import of "tool/exec" refused`) || !strings.Contains(err.Error(), "lib.cue:2:8") {
		t.Fatalf("error = %v, want the tool/exec import refused at lib.cue:2:8", err)
	}
}

func TestLoadRefusesDuplicateKinds(t *testing.T) {
	dir := writeTemplates(t, map[string]string{"a/app.cue": okKind, "b/app.cue": okKind})
	_, err := template.Load(dir)
	if err == nil || !strings.Contains(err.Error(), "defined by both a and b") {
		t.Fatalf("error = %v, want duplicate kind", err)
	}
}

func TestLoadNotAModule(t *testing.T) {
	_, err := template.Load(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "not a CUE module") {
		t.Fatalf("error = %v", err)
	}
}

func TestLoadKeepsGoodKindsBesideBrokenOnes(t *testing.T) {
	dir := writeTemplates(t, map[string]string{
		"app/app.cue": okKind,
		"other/x.cue": strings.Replace(okKind, `kind: "App"`, `kind: "Other"`, 1) + "children: {\n",
	})
	set, err := template.Load(dir)
	if err == nil || set == nil {
		t.Fatalf("Load = %v, %v; want the good kinds and an error", set, err)
	}
	if len(set.Kinds) != 1 || set.Kinds[0].Name != "app" {
		t.Errorf("good kinds = %v, want app", set.Kinds)
	}
	if set.Broken["other"] == nil || !strings.Contains(set.Broken["other"].Error(), "x.cue:") {
		t.Errorf("Broken = %v, want other with its position", set.Broken)
	}
}
