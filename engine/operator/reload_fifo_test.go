package operator_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestReloadRefusesFIFO: a named pipe dropped into a kind's directory as
// extra.cue is refused, naming it, without blocking the reload loop: the
// kind keeps serving its last good revision, and a later valid edit loads.
func TestReloadRefusesFIFO(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	startOperator(t, dir, ns, nil)
	c := newClient(t)
	waitCRD(t)
	mustKubectl(t, redisYAML(ns, "fifo", 2, "7.0"), "apply", "-f", "-")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "fifo", 2) })

	fifo := filepath.Join(dir, "rediscluster", "extra.cue")
	must(t, syscall.Mkfifo(fifo, 0o644))
	eventually(t, 60*time.Second, func() string {
		return crdEvent(t, c, "TemplateError", "extra.cue: a named pipe (FIFO), not a regular file: refused")
	})
	mustKubectl(t, "", "-n", ns, "scale", "rediscluster/fifo", "--replicas=3")
	eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "fifo", 3) })

	must(t, os.Remove(fifo))
	editTemplate(t, dir, addPodLabel("after-fifo"))
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "fifo", "tier", "after-fifo", 3) })
}
