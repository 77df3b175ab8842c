package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestStorageMigrationLogsTrueCounts: the lines an operator logs while it
// migrates 5 Shelves say what is so at each step: the first, before any
// CR is listed, claims no count ("no CR to rewrite" was logged there,
// then "5 CRs rewritten"), the last counts the 5.
func TestStorageMigrationLogsTrueCounts(t *testing.T) {
	ns := clustertest.Namespace(t)
	c := crdClient(t)
	dir, _, _, _ := shelvesSwitched(t, c, ns, 5, true)
	opts := migrateOptions(dir, ns)
	opts.StorageMigrationPageSize = 500
	a, _ := operatortest.StartObserved(t, clustertest.Config(), opts)
	a.WaitLog(t, 90*time.Second, "storage migration of "+shelfCRD, "reason", "StorageMigrationSucceeded")
	var msgs []string
	for _, l := range a.Logged("storage migration of "+shelfCRD, "kind", "Shelf") { // not the Events' lines
		msgs = append(msgs, l.Values["reason"]+": "+l.Msg)
	}
	want := []string{
		"StorageMigrationStarted: storage migration of " + shelfCRD + " v1 -> v2: rewriting the stored CRs",
		"StorageMigrationProgress: storage migration of " + shelfCRD + " v1 -> v2: 5 CRs rewritten of 5 listed (1 page); managedFields of 5 moved to v2",
		"StorageMigrationSucceeded: storage migration of " + shelfCRD + " v1 -> v2: 5 CRs rewritten of 5 listed (1 page); managedFields of 5 moved to v2; status.storedVersions is [v2]",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	for _, m := range msgs {
		if strings.Contains(m, "no CR to rewrite") {
			t.Errorf("logged %q while 5 CRs were to rewrite", m)
		}
	}
}
