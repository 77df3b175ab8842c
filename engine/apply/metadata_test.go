package apply_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/apply"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// answers records the kind of object in every PATCH answer that succeeded.
type answers struct {
	mu    sync.Mutex
	kinds []string
	rt    http.RoundTripper
}

// kindOf is the kind of the object in an answer: its TypeMeta, decoded
// from JSON or from the protobuf envelope (runtime.Unknown).
func kindOf(contentType string, body []byte) string {
	if strings.HasPrefix(contentType, runtime.ContentTypeProtobuf) {
		var u runtime.Unknown
		if err := u.Unmarshal(bytes.TrimPrefix(body, []byte("k8s\x00"))); err != nil {
			return "undecodable protobuf: " + err.Error()
		}
		return u.Kind
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(body, &tm); err != nil {
		return "undecodable " + contentType
	}
	return tm.Kind
}

func (a *answers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.rt.RoundTrip(r)
	if err != nil || r.Method != http.MethodPatch || resp.StatusCode >= 300 {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	a.mu.Lock()
	a.kinds = append(a.kinds, kindOf(resp.Header.Get("Content-Type"), body))
	a.mu.Unlock()
	return resp, nil
}

// An applier with MetadataResponses sends the same applies and is answered
// with the object's metadata only: create, update, unchanged, and the
// create-only apply refused over an existing object, as through Client.
func TestMetadataResponses(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cfg := clustertest.Config()
	rec := &answers{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.rt = rt; return rec })
	responses, err := apply.NewMetadataResponses(cfg, nil, e.c.RESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	a := &apply.Applier{Client: e.c, Responses: responses}

	cm := configMap(e.ns, "meta")
	live := e.mustApply(t, a, cm, apply.Created)
	if live.Object["data"].(map[string]any)["a"] != "1" {
		t.Fatalf("created %v", live.Object)
	}
	e.wantNeeds(t, a, cm, false)
	changed := cm.DeepCopy()
	changed.Object["data"] = map[string]any{"a": "1", "b": "3"}
	live = e.mustApply(t, a, changed, apply.Updated)
	if live.Object["data"].(map[string]any)["b"] != "3" {
		t.Fatalf("updated %v", live.Object)
	}
	e.mustApply(t, a, changed, apply.Unchanged)

	// A cluster-scoped child (no namespace in its path).
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": e.ns + "-meta", "labels": map[string]any{"app": "demo"}}}}
	e.mustApply(t, a, ns, apply.Created)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), ns) })

	if _, err := a.Apply(ctx, configMap(e.ns, "meta"), nil); !apply.IsExists(err) || !strings.Contains(err.Error(), "ConfigMap "+e.ns+"/meta") {
		t.Fatalf("create-only apply over an existing object: %v, want ErrExists naming it", err)
	}
	if got := e.live(t, cm); got.Object["data"].(map[string]any)["b"] != "3" {
		t.Fatalf("the refused create-only apply changed the object: %v", got.Object["data"])
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.kinds) < 3 {
		t.Fatalf("PATCH answers through MetadataResponses: %v, want at least 3", rec.kinds)
	}
	for _, k := range rec.kinds {
		if k != "PartialObjectMetadata" {
			t.Fatalf("PATCH answers: %v, want the objects' metadata only (PartialObjectMetadata)", rec.kinds)
		}
	}
}
