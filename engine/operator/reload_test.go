package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/worker/workertest"
	"github.com/cueop/cueop/internal/testkit"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// editTemplate rewrites the RedisCluster template of dir with edit applied.
func editTemplate(t *testing.T, dir string, edit func(string) string) {
	t.Helper()
	editFile(t, filepath.Join(dir, "rediscluster", "rediscluster.cue"), edit)
}

// addPodLabel makes every Pod carry tier: value.
func addPodLabel(value string) func(string) string {
	return func(src string) string {
		return strings.Replace(src, `metadata: {name: "\(_name)-\(i)", labels: _selector}`,
			`metadata: {name: "\(_name)-\(i)", labels: _selector & {tier: "`+value+`"}}`, 1)
	}
}

func podsLabelled(t *testing.T, c client.Client, ns, cluster, key, value string, want int) string {
	pods := listPods(t, c, ns, cluster)
	n := 0
	for _, p := range pods {
		if p.GetLabels()[key] == value {
			n++
		}
	}
	if n != want || len(pods) != want {
		return fmt.Sprintf("%d of %d pods have %s=%s, want %d", n, len(pods), key, value, want)
	}
	return ""
}

func TestHotReload(t *testing.T) {
	ns, dir, c := serveRedis(t)
	readyRedis(t, c, ns, "hot", 2)
	uids := podUIDs(t, c, ns, "hot")

	t.Run("valid edit converges without restart", func(t *testing.T) {
		editTemplate(t, dir, addPodLabel("cache"))
		eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "hot", "tier", "cache", 2) })
		eventually(t, 60*time.Second, func() string { return readyStatus(t, c, ns, "hot", 2) })
		if got := podUIDs(t, c, ns, "hot"); got != uids {
			t.Errorf("pods were recreated for a label change: %s -> %s", uids, got)
		}
	})

	t.Run("broken edit keeps the last good revision serving", func(t *testing.T) {
		editTemplate(t, dir, func(s string) string { return s + "\nchildren: broken: {\n" })
		eventually(t, 60*time.Second, func() string { return crdEvent(t, c, "TemplateError", "rediscluster.cue:") })
		mustKubectl(t, "", "-n", ns, "scale", "rediscluster/hot", "--replicas=3")
		eventually(t, 60*time.Second, func() string {
			if why := podsLabelled(t, c, ns, "hot", "tier", "cache", 3); why != "" {
				return why
			}
			return readyStatus(t, c, ns, "hot", 3)
		})
	})

	t.Run("fixing the template resumes", func(t *testing.T) {
		editTemplate(t, dir, func(s string) string {
			s = strings.Replace(s, "\nchildren: broken: {\n", "", 1)
			return addPodLabel("db")(strings.Replace(s, `_selector & {tier: "cache"}`, `_selector`, 1))
		})
		eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "hot", "tier", "db", 3) })
	})
}

func podUIDs(t *testing.T, c client.Client, ns, cluster string) string {
	var uids []string
	for _, p := range listPods(t, c, ns, cluster) {
		uids = append(uids, p.GetName()+"="+string(p.GetUID()))
	}
	return strings.Join(uids, ",")
}

// crdEvent says why no Warning event with reason and a message containing
// text is on the RedisCluster CRD, or "".
func crdEvent(t *testing.T, c client.Client, reason, text string) string {
	if why := crdEventOn(t, "redisclusters.cache.example.com", reason, text); why != "" {
		return why
	}
	events := &corev1.EventList{}
	if err := c.List(context.Background(), events); err != nil {
		return err.Error()
	}
	return ""
}

// crdEventOn says why `kubectl describe crd` shows no event with reason and
// every one of texts on the CRD named crd, or "".
func crdEventOn(t *testing.T, crd, reason string, texts ...string) string {
	out, err := kubectl(t, "", "describe", "crd", crd)
	if err != nil {
		return err.Error()
	}
	for _, text := range append([]string{reason}, texts...) {
		if !strings.Contains(out, text) {
			return "kubectl describe crd " + crd + " shows no " + reason + " event naming " + text
		}
	}
	return ""
}

// crdEventSince is "" once an Event of reason on CRD crd, last seen at
// since or later (to the second: Events carry no finer time), names every
// text; else what is missing. Events of earlier tests on the same CRD do
// not count.
func crdEventSince(t *testing.T, crd, reason string, since time.Time, texts ...string) string {
	out, err := kubectl(t, "", "get", "events", "-A", "--field-selector", "involvedObject.kind=CustomResourceDefinition,involvedObject.name="+crd+",reason="+reason, "-o", "json")
	if err != nil {
		return err.Error()
	}
	var list corev1.EventList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return err.Error()
	}
	since = since.Truncate(time.Second)
next:
	for _, e := range list.Items {
		if e.LastTimestamp.Time.Before(since) && e.EventTime.Time.Before(since) {
			continue
		}
		for _, text := range texts {
			if !strings.Contains(e.Message, text) {
				continue next
			}
		}
		return ""
	}
	return fmt.Sprintf("no %s Event on CRD %s since %s naming %q (%d older or other)", reason, crd, since.Format(time.RFC3339), texts, len(list.Items))
}

// waitCRD waits until the RedisCluster CRD is established and the
// conversion webhook it points at takes connections (the CRD of an earlier
// test points at that test's operator, gone, until this one installs it).
func waitCRD(t *testing.T) {
	t.Helper()
	eventually(t, 60*time.Second, func() string {
		out, err := kubectl(t, "", "get", "crd", "redisclusters.cache.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if err != nil || out != "True" {
			return "RedisCluster CRD not established: " + out
		}
		raw, _ := kubectl(t, "", "get", "crd", "redisclusters.cache.example.com", "-o", `jsonpath={.spec.conversion.webhook.clientConfig.url}`)
		if raw == "" {
			return ""
		}
		u, err := url.Parse(raw)
		if err != nil {
			return "conversion webhook URL " + raw + ": " + err.Error()
		}
		conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
		if err != nil {
			return "the RedisCluster CRD's conversion webhook does not answer: " + err.Error()
		}
		_ = conn.Close()
		return ""
	})
}

// TestConfigMapMountedTemplates serves templates laid out as a ConfigMap
// volume (files behind a ..data symlink) and edits them by the atomic
// symlink swap the kubelet performs.
func TestConfigMapMountedTemplates(t *testing.T) {
	ns := clustertest.Namespace(t)
	root := filepath.Join(t.TempDir(), "mount")
	writeVolume(t, root, "..2026_11_29_01", "../../templates", nil)
	startOperator(t, root, ns, nil)
	c := newClient(t)
	waitCRD(t)
	readyRedis(t, c, ns, "cm", 1)

	writeVolume(t, root, "..2026_11_29_02", "../../templates", addPodLabel("swapped"))
	eventually(t, 60*time.Second, func() string { return podsLabelled(t, c, ns, "cm", "tier", "swapped", 1) })
}

// writeVolume lays out src as the kubelet lays out a ConfigMap volume in
// root: the files in a timestamped directory, `..data` pointing at it, and
// each top-level entry a symlink through `..data`. A second call swaps
// `..data` atomically and removes the old directory.
func writeVolume(t *testing.T, root, stamp, src string, edit func(string) string) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, stamp)
	if out, err := exec.Command("cp", "-r", src, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if edit != nil {
		editTemplate(t, dir, edit)
	}
	old, _ := os.Readlink(filepath.Join(root, "..data"))
	tmp := filepath.Join(root, "..data_tmp")
	must(t, os.Symlink(stamp, tmp))
	must(t, os.Rename(tmp, filepath.Join(root, "..data")))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		link := filepath.Join(root, e.Name())
		if _, err := os.Lstat(link); err != nil {
			must(t, os.Symlink(filepath.Join("..data", e.Name()), link))
		}
	}
	if old != "" {
		must(t, os.RemoveAll(filepath.Join(root, old)))
	}
}

// TestBrokenReloadLoggedOnce: a template edit that does not load is one
// ERROR record ("templates did not load", with its position), not two: the
// templates watch does not log the same error again as a failed reload.
func TestBrokenReloadLoggedOnce(t *testing.T) {
	ns := clustertest.Namespace(t)
	dir := workertest.Templates(t, map[string]string{"scaled/scaled.cue": scaledTemplate})
	t.Cleanup(func() { _, _ = kubectl(t, "", "delete", "crd", "scaleds.absent.test.example", "--ignore-not-found") })
	act, stop := operatortest.StartObserved(t, clustertest.Config(), operatortest.Options(dir, ns))
	defer stop()
	act.WaitLog(t, time.Minute, "serving kind", "kind", "Scaled")

	testkit.WriteKind(t, dir, "scaled", scaledTemplate+"\nbroken: 1 & 2\n")
	act.WaitLog(t, time.Minute, "templates did not load")
	// A fixed edit is a new revision served: the watch has returned from
	// the broken reload, and logged whatever it would log of it.
	testkit.WriteKind(t, dir, "scaled", scaledTemplate+"\n// fixed\n")
	act.WaitLog(t, time.Minute, "template changed", "kind", "Scaled")
	if got := act.Logged("templates did not load"); len(got) != 1 {
		t.Errorf("%d load errors logged, want 1: %v", len(got), got)
	}
	if got := act.Logged("template reload"); len(got) != 0 {
		t.Errorf("the load error logged again by the templates watch: %v", got)
	}
}

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
