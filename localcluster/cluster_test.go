package localcluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/localcluster"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper() // see TestChildrenDieWithTestBinary
		return
	}
	clustertest.Main(m, localcluster.Options{AuditLog: true, FeatureGates: map[string]bool{"ShardedListAndWatch": true}})
}

const waitTimeout = 60 * time.Second

// newClient returns a controller-runtime client for the shared cluster that
// knows the built-in types and CRDs.
func newClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(clustertest.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls cond until it returns true, failing the test after waitTimeout.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestServerVersion(t *testing.T) {
	t.Parallel()
	dc, err := discovery.NewDiscoveryClientForConfig(clustertest.Config())
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.37.2" || v.Major != "1" || v.Minor != "37" {
		t.Errorf("server version = %s (major %q, minor %q), want v1.37.2", v.GitVersion, v.Major, v.Minor)
	}
}

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: web
    image: example.invalid/web:1
    ports: [{containerPort: 80}]
`

// kubectl runs /usr/bin/kubectl (or kubectl from PATH) against the shared cluster.
func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed as a real client: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), path,
		append([]string{"--kubeconfig", clustertest.Cluster().KubeconfigPath}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPodBecomesReadyOnFakeNode(t *testing.T) {
	t.Parallel()
	ns := clustertest.Namespace(t)
	kubectl(t, podManifest, "apply", "-n", ns, "-f", "-")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "pod/web", "--timeout=60s")
	node := kubectl(t, "", "get", "-n", ns, "pod/web", "-o", "jsonpath={.spec.nodeName}")
	if !strings.HasPrefix(node, "kwok-node-") {
		t.Errorf("pod runs on node %q, want a kwok-node-*", node)
	}
	ip := kubectl(t, "", "get", "-n", ns, "pod/web", "-o", "jsonpath={.status.podIP}")
	if !strings.HasPrefix(ip, "10.") {
		t.Errorf("pod IP = %q, want one from the node's pod CIDR", ip)
	}
}

func TestFakeNodes(t *testing.T) {
	t.Parallel()
	var nodes corev1.NodeList
	if err := newClient(t).List(t.Context(), &nodes, client.MatchingLabels{
		localcluster.NodeLabel: localcluster.NodeLabelValue}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != localcluster.DefaultNodes {
		t.Fatalf("%d fake nodes, want %d", len(nodes.Items), localcluster.DefaultNodes)
	}
	for _, n := range nodes.Items {
		if pods := n.Status.Allocatable.Pods(); pods.Value() < 10000 {
			t.Errorf("node %s: allocatable pods = %s, want 10000", n.Name, pods)
		}
	}
}

func webPod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "example.invalid/web:1",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
		}}},
	}
}

func TestServiceGetsEndpointSlice(t *testing.T) {
	t.Parallel()
	ns, c := clustertest.Namespace(t), newClient(t)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}},
		},
	}
	for _, obj := range []client.Object{webPod(ns), svc} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(svc.Spec.ClusterIP, "10.96.") {
		t.Errorf("cluster IP = %s, want one of %s", svc.Spec.ClusterIP, localcluster.ServiceCIDR)
	}
	eventually(t, "ready endpoint in the Service's EndpointSlice", func(ctx context.Context) (bool, error) {
		var slices discoveryv1.EndpointSliceList
		err := c.List(ctx, &slices, client.InNamespace(ns),
			client.MatchingLabels{discoveryv1.LabelServiceName: "web"})
		return err == nil && hasReadyEndpoint(slices.Items), err
	})
}

func hasReadyEndpoint(slices []discoveryv1.EndpointSlice) bool {
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready && len(e.Addresses) > 0 {
				return true
			}
		}
	}
	return false
}

func TestOwnedPodIsGarbageCollected(t *testing.T) {
	t.Parallel()
	ns, c := clustertest.Namespace(t), newClient(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := c.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	pod := webPod(ns)
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
	}}
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod scheduled", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod)
		return err == nil && pod.Spec.NodeName != "", err
	})
	if err := c.Delete(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	eventually(t, "owned pod deleted", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size": {Type: "integer", Minimum: new(float64(1))},
		}},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.cueop.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "test.cueop.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
			}},
		},
	}
}

func TestCRDServesCustomResources(t *testing.T) {
	t.Parallel()
	ns, c := clustertest.Namespace(t), newClient(t)
	crd := widgetCRD()
	if err := c.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
	eventually(t, "CRD established", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd)
		return err == nil && established(crd), err
	})
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("test.cueop.dev/v1")
	w.SetKind("Widget")
	w.SetName("w1")
	w.SetNamespace(ns)
	if err := unstructured.SetNestedField(w.Object, int64(3), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "create Widget", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, w.DeepCopy()) == nil, nil // discovery may lag behind
	})
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(w.GroupVersionKind())
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size = %d, want 3", size)
	}
	bad := w.DeepCopy()
	bad.SetName("w2")
	_ = unstructured.SetNestedField(bad.Object, int64(0), "spec", "size")
	if err := c.Create(t.Context(), bad); !apierrors.IsInvalid(err) {
		t.Errorf("create Widget with size 0: err = %v, want Invalid (schema minimum)", err)
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func TestAuditLogCountsRequestsPerUserAgent(t *testing.T) {
	t.Parallel()
	const agent = "localcluster-audit-test/1.0"
	cfg := clustertest.Config()
	cfg.UserAgent = agent
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.Namespace(t)
	for range 3 {
		if err := c.List(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "3 audit events", func(context.Context) (bool, error) {
		n, err := countAuditEvents(clustertest.Cluster().AuditLogPath(), agent, "list", "configmaps")
		return n == 3, err
	})
}

// auditEvent holds the audit event fields the tests read.
type auditEvent struct {
	Stage, Verb, UserAgent string
	ObjectRef              struct{ Resource string }
}

// countAuditEvents counts the completed requests of userAgent with verb on
// resource in an audit log.
func countAuditEvents(path, userAgent, verb, resource string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Stage == "ResponseComplete" &&
			ev.UserAgent == userAgent && ev.Verb == verb && ev.ObjectRef.Resource == resource {
			n++
		}
	}
	return n, sc.Err()
}

// readyz reports whether the apiserver behind cfg answers /readyz.
func readyz(ctx context.Context, cfg *rest.Config) error {
	rc, err := rest.UnversionedRESTClientFor(withNegotiatedSerializer(cfg))
	if err != nil {
		return err
	}
	return rc.Get().AbsPath("/readyz").Do(ctx).Error()
}

func withNegotiatedSerializer(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	cfg.Timeout = 10 * time.Second
	return cfg
}
