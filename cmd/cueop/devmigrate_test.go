package main

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/cueop/cueop/engine/migrate"
	"github.com/cueop/cueop/engine/operator"
)

// migrationsView is a devView whose only state is its storage migrations.
type migrationsView struct{ ms []operator.MigrationProgress }

func (migrationsView) Parents() cache.Cache                              { return nil }
func (migrationsView) Progress() []operator.KindProgress                 { return nil }
func (v migrationsView) StorageMigrations() []operator.MigrationProgress { return v.ms }

// TestDevPrintsStorageMigrations: `cueop dev` prints a line per storage
// migration whose state changed, and nothing while it stays the same.
func TestDevPrintsStorageMigrations(t *testing.T) {
	p := migrate.Progress{CRD: "shelves.migrate.example.com", Kind: "Shelf", From: []string{"v1"}, To: "v2", Listed: 4, Migrated: 3, Pages: 2}
	var out strings.Builder
	last := map[string]string{}
	printMigrations(&out, migrationsView{[]operator.MigrationProgress{{Progress: p}}}, last)
	printMigrations(&out, migrationsView{[]operator.MigrationProgress{{Progress: p}}}, last)
	p.Listed, p.Migrated, p.Pages, p.Done = 6, 5, 3, true
	printMigrations(&out, migrationsView{[]operator.MigrationProgress{{Progress: p, Err: errors.New("boom")}}}, last)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"storage migration Shelf                  v1 -> v2: 3 CRs rewritten of 4 listed (2 pages)",
		"storage migration Shelf                  v1 -> v2: 5 CRs rewritten of 6 listed (3 pages); status.storedVersions is [v2]; FAILED, retrying: boom",
	}
	if len(lines) != len(want) {
		t.Fatalf("printed %q, want %d lines", out.String(), len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d = %q, want it to end with %q", i, lines[i], w)
		}
	}
}

// TestDevMigrationsOfSameNamedKinds: the storage migrations of two kinds of
// one Kind name in different groups print each with its group, as their
// rollouts do; a kind whose name is its own keeps its short name.
func TestDevMigrationsOfSameNamedKinds(t *testing.T) {
	com := migrate.Progress{CRD: "staticsites.web.example.com", Kind: "StaticSite", From: []string{"v1"}, To: "v2", Listed: 2, Migrated: 2, Pages: 1}
	org := migrate.Progress{CRD: "staticsites.web.example.org", Kind: "StaticSite", From: []string{"v1"}, To: "v2", Listed: 2, Migrated: 2, Pages: 1}
	shelf := migrate.Progress{CRD: "shelves.migrate.example.com", Kind: "Shelf", From: []string{"v1"}, To: "v2", Listed: 3, Migrated: 3, Pages: 1}
	var out strings.Builder
	printMigrations(&out, migrationsView{[]operator.MigrationProgress{{Progress: com}, {Progress: org}, {Progress: shelf}}}, map[string]string{})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"storage migration StaticSite.web.example.com v1 -> v2: 2 CRs rewritten of 2 listed (1 page)",
		"storage migration StaticSite.web.example.org v1 -> v2: 2 CRs rewritten of 2 listed (1 page)",
		"storage migration Shelf                  v1 -> v2: 3 CRs rewritten of 3 listed (1 page)",
	}
	if len(lines) != len(want) {
		t.Fatalf("printed %q, want %d lines", out.String(), len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d = %q, want it to end with %q", i, lines[i], w)
		}
	}
}
