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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
