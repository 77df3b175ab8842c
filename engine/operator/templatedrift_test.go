package operator_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/internal/testkit"
)

// TestTemplateRestoredAndForeignLeft: a Template is the operator's; a
// status someone else edits is written back, and a Template someone
// deletes comes back, while its kind is in the templates. A Template of
// another operator's templates (another mark), whose package this one does
// not have, is neither marked removed nor touched.
func TestTemplateRestoredAndForeignLeft(t *testing.T) {
	const foreign = "template/gadgets.other.example.com"
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate, foreign)
	})
	mustKubectl(t, string(operator.TemplateCRD()), "apply", "-f", "-")
	mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/"+operator.TemplateCRDName)
	mustKubectl(t, `apiVersion: cueop.dev/v1alpha1
kind: Template
metadata:
  name: gadgets.other.example.com
  annotations: {cueop.dev/templates: /elsewhere/templates}
spec: {}
`, "apply", "-f", "-")
	foreignStatus := `{"status":{"package":"gadget","revision":"r-other","source":{"ref":"/elsewhere/templates"},` +
		`"conditions":[{"type":"Ready","status":"True","reason":"Serving","message":"other","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	mustKubectl(t, "", "patch", foreign, "--subresource=status", "--type=merge", "-p", foreignStatus)

	_, dir := startRedisFleet(t)
	var rev string
	eventually(t, 60*time.Second, func() string { // written by this test's operator, not an earlier one
		s, msg, obj := templateCondition(t, "Ready")
		abs, _ := filepath.Abs(dir)
		if obj == nil || obj.GetAnnotations()["cueop.dev/templates"] != abs || s != "True" {
			return fmt.Sprintf("Template not Ready (%s: %s) and marked with %s: %v", s, msg, abs, obj)
		}
		rev, _, _ = unstructured.NestedString(obj.Object, "status", "revision")
		return ""
	})

	mustKubectl(t, "", "patch", redisTemplate, "--subresource=status", "--type=merge", "-p",
		`{"status":{"revision":"edited","conditions":[{"type":"Ready","status":"False","reason":"Edited","message":"by hand","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	restored := func() string {
		s, msg, obj := templateCondition(t, "Ready")
		if obj == nil {
			return msg
		}
		got, _, _ := unstructured.NestedString(obj.Object, "status", "revision")
		if s != "True" || got != rev {
			return fmt.Sprintf("Ready %s (%s), revision %q, want True at %q", s, msg, got, rev)
		}
		return ""
	}
	eventually(t, 60*time.Second, restored)

	// The restore came in a flush after the one that read the Templates at
	// start: the foreign one would have been marked removed by then.
	s, msg, _ := kubectlCondition(t, foreign, "Ready")
	if s != "True" || msg != "other" {
		t.Errorf("the other operator's Template was touched: Ready %s: %s", s, msg)
	}

	mustKubectl(t, "", "delete", redisTemplate)
	eventually(t, 60*time.Second, restored)
}

// kubectlCondition is the status and message of the condition typ of the
// object resource/name, read with kubectl.
func kubectlCondition(t *testing.T, resource, typ string) (status, message string, obj *unstructured.Unstructured) {
	t.Helper()
	out, err := kubectl(t, "", "get", resource, "-o", "json")
	if err != nil {
		return "", out, nil
	}
	obj = &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(out)); err != nil {
		t.Fatal(err)
	}
	c := conditionOf(obj, typ)
	if c == nil {
		return "", "no condition " + typ, obj
	}
	status, _ = c["status"].(string)
	message, _ = c["message"].(string)
	return status, message, obj
}

// TestTemplateStatusForgedIsPutBack: a Template's status is the
// operator's whatever field manager writes it. A status patched with
// --field-manager=cueop (the manager name anyone allowed to patch
// templates/status may give), and one patched after the Template's
// cueop.dev/templates mark was changed to another operator's, claiming
// Degraded=False, revision=forged and serviceAccount=kube-system/forged
// over a broken edit of the kind, is put back to what the operator wrote: the forged fields gone, the
// mark back, and cueop_template_restores_total counts it. A writer that
// keeps forging it is answered a few times a minute, then held, then
// answered again once the minute is over.
func TestTemplateStatusForgedIsPutBack(t *testing.T) {
	t.Cleanup(func() { // registered first, run last: after the operator stopped
		_, _ = kubectl(t, "", "delete", "--ignore-not-found", redisTemplate)
	})
	_, dir := startRedisFleet(t)
	abs, _ := filepath.Abs(dir)
	eventually(t, 60*time.Second, func() string { // written by this test's operator, not an earlier one
		s, msg, obj := templateCondition(t, "Ready")
		if obj == nil || obj.GetAnnotations()["cueop.dev/templates"] != abs || s != "True" {
			return fmt.Sprintf("Template not Ready (%s: %s) and marked with %s: %v", s, msg, abs, obj)
		}
		return ""
	})
	// A broken edit: the status a forger would hide.
	good := testkit.Read(t, dir, "rediscluster/rediscluster.cue")
	testkit.Write(t, dir, map[string]string{"rediscluster/rediscluster.cue": good + "\nbroken: 1 & 2\n"})
	var want map[string]any
	eventually(t, 60*time.Second, func() string {
		s, msg, obj := templateCondition(t, "Degraded")
		if s != "True" || !strings.Contains(msg, "rediscluster.cue:") {
			return "Degraded " + s + ": " + msg
		}
		want, _, _ = unstructured.NestedMap(obj.Object, "status")
		return ""
	})
	if want["serviceAccount"] == "kube-system/forged" || want["revision"] == "forged" {
		t.Fatalf("status before the forgery: %v", want)
	}
	forged := `{"status":{"revision":"forged","serviceAccount":"kube-system/forged","lastError":"none",` +
		`"conditions":[{"type":"Degraded","status":"False","reason":"Serving","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"},` +
		`{"type":"Ready","status":"True","reason":"Serving","message":"forged","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`
	before := metricSum(t, "cueop_template_restores_total", "template", redisCRD, "result", "restored")

	for _, tc := range []struct {
		name    string
		prepare []string // a kubectl command run before the forged status
	}{
		{name: "field manager cueop"},
		// The mark (cueop.dev/templates) decides nothing: the operator
		// holding the kind's CRD writes the Template.
		{name: "mark changed", prepare: []string{"annotate", "--overwrite", "--field-manager=cueop", redisTemplate, "cueop.dev/templates=/elsewhere/templates"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				mustKubectl(t, "", tc.prepare...)
			}
			out := mustKubectl(t, "", "patch", redisTemplate, "--subresource=status", "--type=merge", "--field-manager=cueop", "-p", forged, "-o", "json")
			if !strings.Contains(out, `"kube-system/forged"`) {
				t.Fatalf("the forged status was not written: %s", out)
			}
			// The status comes back: kubectl waits on the Template's watch.
			mustKubectl(t, "", "wait", "--for=condition=Degraded=True", "--timeout=60s", redisTemplate)
			eventually(t, 60*time.Second, func() string {
				_, _, obj := templateCondition(t, "Ready")
				if obj == nil {
					return "no Template"
				}
				got, _, _ := unstructured.NestedMap(obj.Object, "status")
				if !reflect.DeepEqual(got, want) {
					return fmt.Sprintf("status %v, want %v", got, want)
				}
				if m := obj.GetAnnotations()["cueop.dev/templates"]; m != abs {
					return fmt.Sprintf("marked %q, want %q", m, abs)
				}
				return ""
			})
		})
	}
	if got := metricSum(t, "cueop_template_restores_total", "template", redisCRD, "result", "restored"); got < before+2 {
		t.Errorf("cueop_template_restores_total{template=%s} = %v, want at least %v", redisCRD, got, before+2)
	}

	// A writer that keeps forging it: the operator answers a few times a
	// minute, then holds (counted), then, once the minute is over, puts
	// its status back again.
	held := metricSum(t, "cueop_template_restores_total", "template", redisCRD, "result", "held")
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("10 forgeries in a row each restored: no bound")
		}
		restored := metricSum(t, "cueop_template_restores_total", "template", redisCRD, "result", "restored")
		mustKubectl(t, "", "patch", redisTemplate, "--subresource=status", "--type=merge", "--field-manager=cueop", "-p", forged)
		var answer string
		eventually(t, 60*time.Second, func() string {
			switch {
			case metricSum(t, "cueop_template_restores_total", "template", redisCRD, "result", "held") > held:
				answer = "held"
			case metricSum(t, "cueop_template_restores_total", "template", redisCRD, "result", "restored") > restored:
				answer = "restored"
			default:
				return "forgery neither restored nor held"
			}
			return ""
		})
		if answer == "held" {
			break
		}
	}
	if s, msg, _ := templateCondition(t, "Degraded"); s != "False" || msg != "forged" {
		t.Fatalf("held, yet Degraded is %s: %s", s, msg)
	}
	mustKubectl(t, "", "wait", "--for=condition=Degraded=True", "--timeout=90s", redisTemplate)
}
