package operator_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cueop/cueop/engine/operator"
	"github.com/cueop/cueop/engine/operator/operatortest"
	"github.com/cueop/cueop/localcluster/clustertest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsAndProbes(t *testing.T) {
	ns := clustertest.Namespace(t)
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	op, err := operator.New(clustertest.Config(), operator.Options{
		Templates: copyTemplates(t), InstallCRDs: true, Namespace: ns,
		Manager: ctrl.Options{Metrics: metricsserver.Options{BindAddress: metricsAddr}, HealthProbeBindAddress: probeAddr},
	})
	if err != nil {
		t.Fatal(err)
	}
	must(t, op.Manager().AddHealthzCheck("healthz", healthz.Ping))
	must(t, op.Manager().AddReadyzCheck("readyz", healthz.Ping))
	operatortest.Run(t, op)

	c := newClient(t)
	waitCRD(t)
	readyRedis(t, c, ns, "obs", 1)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet("http://" + probeAddr + path); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	_, body := httpGet("http://" + metricsAddr + "/metrics")
	for _, want := range []string{
		`cueop_render_duration_seconds_count{kind="RedisCluster",result="ok"}`,
		`cueop_applies_total{kind="RedisCluster",result="created"}`,
		`cueop_template_revision{kind="RedisCluster",package="rediscluster",revision="`,
		`cueop_template_load_errors_total`,
		`controller_runtime_reconcile_total{controller="cueop-rediscluster"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
