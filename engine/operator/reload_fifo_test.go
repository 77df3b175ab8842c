package operator_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// TestReloadRefusesFIFO: a named pipe dropped into a kind's directory as
// extra.cue is refused, naming it, without blocking the reload loop: the
// kind keeps serving its last good revision, and a later valid edit loads.
func TestReloadRefusesFIFO(t *testing.T) {
	ns, dir, c := serveRedis(t)
	readyRedis(t, c, ns, "fifo", 2)

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

// TestEditsLoadAfterAPipeWhereAGlobLists: a named pipe appears where a
// kind's @embed glob lists a directory (conf.d of glob=conf.d/*.conf) while
// another kind is edited, is removed, and the kind is edited twice: each
// edit is served (its revision, as the directory holds it, on
// cueop_template_revision) and a CR created after it renders it. The
// operator compiles in its own process, where a compile that ran out of its
// budget runs on abandoned, and refuses the kind's compiles as busy while
// --render-max-abandoned (1 here) of them do. The compile opened the pipe
// as a directory, which waits for a writer, for good once the pipe is
// gone: after the one reload that saw it, neither edit ever loaded (the
// new CRs rendered the revision before them).
func TestEditsLoadAfterAPipeWhereAGlobLists(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := copyTemplates(t)
	editTemplate(t, dir, func(s string) string {
		return strings.Replace(s, "_conf: _ @embed(file=redis.conf, type=text)",
			"_conf: _ @embed(file=redis.conf, type=text)\n_confd: _ @embed(glob=\"conf.d/*.conf\", type=text, allowEmptyGlob)", 1)
	})
	opts := operatortest.Options(dir, ns)
	opts.InProcess = true
	opts.Budget = budget.Budget{MaxAbandoned: 1}
	operatortest.StartObserved(t, clustertest.Config(), opts)
	c := newClient(t)
	waitCRD(t)
	readyRedis(t, c, ns, "glob", 1)

	pipe := filepath.Join(dir, "rediscluster", "conf.d")
	must(t, syscall.Mkfifo(pipe, 0o644))
	// A reload with the pipe in place is over once the WebApp edit made
	// after it is served (the kinds compile one after another).
	editFile(t, filepath.Join(dir, "webapp", "webapp.cue"), func(s string) string { return s + "\n// edited beside a pipe\n" })
	waitServed(t, dir, "webapp", "WebApp", 90*time.Second)
	must(t, os.Remove(pipe))

	for i, tier := range []string{"one", "two"} {
		if i == 0 {
			editTemplate(t, dir, addPodLabel(tier))
		} else {
			editTemplate(t, dir, func(s string) string { return strings.Replace(s, `tier: "one"`, `tier: "two"`, 1) })
		}
		waitServed(t, dir, "rediscluster", "RedisCluster", 60*time.Second)
		name := "after-" + tier
		mustKubectl(t, redisYAML(ns, name, 1, "7.0"), "apply", "-f", "-")
		eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, name, "tier", tier, 1) })
	}
}

// waitServed waits until the operator serves the package pkg (of kind) at
// the revision the templates directory dir holds now.
func waitServed(t *testing.T, dir, pkg, kind string, timeout time.Duration) {
	t.Helper()
	k, err := template.LoadKind(dir, pkg, template.LoadOptions{})
	must(t, err)
	eventually(t, timeout, func() string {
		if metricSum(t, "cueop_template_revision", "kind", kind, "revision", k.Revision) != 1 {
			return kind + " is not served at revision " + k.Revision + ", the directory's"
		}
		return ""
	})
}
