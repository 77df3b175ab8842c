package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/internal/testkit"
)

// TestVetTakesWhatTheSpokeDoesNotShow: a golden case of two backups, of
// which the spoke v1 shows the first without its storage class, goes to
// v1 and back as the operator keeps it, through the annotation: vet's
// round trips take it (they refused it, comparing the list whole).
func TestVetTakesWhatTheSpokeDoesNotShow(t *testing.T) {
	root := t.TempDir()
	templates := filepath.Join(root, "templates")
	for name, src := range map[string]string{
		"cue.mod/module.cue": testkit.ModuleFile("example.com/pg"),
		"pg/pg.cue": `package pg
resource: {group: "db.test.example", version: "v2", kind: "PostgresCluster"}
#Backup: {schedule: string, retention: *7 | int & >=1, class: *"standard" | string}
#Spec: backups: *[] | [...#Backup]
parent: spec: #Spec
children: {}
versions: v1: {
	#Spec: backup?: {schedule: string, retention: *7 | int & >=1}
	toHub: {in: spec: _, out: spec: {if in.spec.backup != _|_ {backups: [in.spec.backup]}}}
	fromHub: {in: spec: _, out: spec: {if len(in.spec.backups) > 0 {backup: {schedule: in.spec.backups[0].schedule, retention: in.spec.backups[0].retention}}}}
}
`,
	} {
		p := filepath.Join(templates, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := filepath.Join(root, "cases")
	if err := os.MkdirAll(filepath.Join(cases, "pg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cases, "pg", "two-backups.txtar"), []byte(`Two backups; v1 shows the first.
-- parent.yaml --
apiVersion: db.test.example/v2
kind: PostgresCluster
metadata: {name: two, namespace: t}
spec:
  backups:
  - {schedule: "0 1 * * *", retention: 1, class: cold}
  - {schedule: "0 2 * * *", retention: 2, class: fast}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := template.Load(templates)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := generateCRDs(set)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := vetConversions(&out, set, crds, cases); err != nil {
		t.Fatalf("vet's round trips of a two-backup case the annotation keeps: %v", err)
	}
	if !strings.Contains(out.String(), "ok   pg: ") {
		t.Errorf("vet output: %s", out.String())
	}
}
