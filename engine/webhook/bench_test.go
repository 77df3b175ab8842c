package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/cueop/cueop/engine/convert"
	"github.com/cueop/cueop/engine/template/templatetest"
	"github.com/cueop/cueop/engine/webhook"
)

// BenchmarkConvertList1000 converts a list of 1,000 RedisClusters from v1
// to v2 with the shipped template's CUE conversions, as the API server
// asks when a client lists them at v2: one ConversionReview of 1,000
// objects POSTed over HTTPS to controller-runtime's webhook server.
// Reported: p50 and p99 per request, CPU (user and system, both ends)
// per object.
// Each request's specs are new to the converter (their version differs
// from every earlier one), so each object is evaluated.
func BenchmarkConvertList1000(b *testing.B) {
	url, client := benchServer(b)
	var durations []time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	round := 0
	for b.Loop() {
		body := reviewOf1000(b, round)
		round++
		start := time.Now()
		postReview(b, client, url, body)
		durations = append(durations, time.Since(start))
	}
	cpu := cpuTime() - cpu0
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	b.ReportMetric(ms(durations[len(durations)/2]), "p50-ms/req")
	b.ReportMetric(ms(durations[(len(durations)*99)/100]), "p99-ms/req")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(durations)*1000), "cpu-µs/obj")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + workersCPU()
}

// benchServer serves the RedisCluster's conversions on controller-runtime's
// webhook server on 127.0.0.1 and returns its URL and a client trusting it.
func benchServer(b *testing.B) (string, *http.Client) {
	h := benchHandler(b)
	certs, err := webhook.LocalCerts()
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port,
		TLSOpts: []func(*tls.Config){func(cfg *tls.Config) { cfg.GetCertificate = certs.GetCertificate }}})
	srv.Register(webhook.Path, h)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = srv.Start(ctx) }()
	b.Cleanup(cancel)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certs.CABundle())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	url := webhook.LocalURL("127.0.0.1", port)
	started := srv.StartedChecker()
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	}); err != nil {
		b.Fatal("webhook server did not start: ", err)
	}
	return url, client
}

// BenchmarkHandleOne is BenchmarkConvertOne's review answered by the
// handler alone, in process: no TLS, no HTTP transport, the webhook's own
// share of a review (decoding it, converting its object, encoding the
// answer). Load on the machine changes its time, not its allocations.
func BenchmarkHandleOne(b *testing.B) {
	h := benchHandler(b)
	body := reviewOfOne(b)
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// benchHandler is a Handler with the RedisCluster's converter, in workers
// under the workers build tag (bench_worker_test.go).
func benchHandler(b *testing.B) *webhook.Handler {
	set := templatetest.Load(b, "../../templates")
	k := set.Lookup("cache.example.com", "RedisCluster")
	c, err := convert.New(k)
	if err != nil || c == nil {
		b.Fatalf("converter: %v", err)
	}
	var conv webhook.Converter = c
	if inWorkers != nil { // bench_worker_test.go
		conv = inWorkers(b, k)
	}
	reg := &webhook.Registry{}
	reg.Set(schema.GroupKind{Group: "cache.example.com", Kind: "RedisCluster"}, conv)
	return &webhook.Handler{Registry: reg}
}

func reviewOf1000(b *testing.B, round int) []byte {
	objs := make([]runtime.RawExtension, 1000)
	for i := range objs {
		objs[i] = runtime.RawExtension{Raw: fmt.Appendf(nil, `{"apiVersion":"cache.example.com/v1","kind":"RedisCluster",`+
			`"metadata":{"name":"r%d","namespace":"bench","uid":"u%d","resourceVersion":"%d","generation":2,"labels":{"team":"a"}},`+
			`"spec":{"replicas":%d,"version":"7.%d.%d","minReady":1},`+
			`"status":{"readyReplicas":1,"phase":"Running","observedGeneration":2,"revision":"abc","conditions":[{"type":"Ready","status":"True"}]}}`,
			i, i, i, 1+i%9, round, i)}
	}
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "bench", DesiredAPIVersion: "cache.example.com/v2", Objects: objs}})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func postReview(b *testing.B, client *http.Client, url string, body []byte) {
	postReviewOf(b, client, url, body, 1000)
}

// postReviewOf posts a review and checks that its n objects converted.
func postReviewOf(b *testing.B, client *http.Client, url string, body []byte, n int) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := &apiextensionsv1.ConversionReview{}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		b.Fatal(err)
	}
	if out.Response == nil || out.Response.Result.Status != metav1.StatusSuccess || len(out.Response.ConvertedObjects) != n {
		b.Fatalf("response %+v", out.Response)
	}
}

// BenchmarkConvertOne converts one RedisCluster from v1 to v2 per
// ConversionReview, as the API server asks for each write of a CR when it
// serves v2 beside the storage version v1 (its watch cache of v2): the
// object as stored, managedFields included, its spec the same each time
// (a status write), found in the converter's memo after the first. Reported: p50 and p99 per
// request, CPU (user and system, both ends) per object.
func BenchmarkConvertOne(b *testing.B) {
	url, client := benchServer(b)
	body := reviewOfOne(b)
	var durations []time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		postReviewOf(b, client, url, body, 1)
		durations = append(durations, time.Since(start))
	}
	cpu := cpuTime() - cpu0
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	b.ReportMetric(ms(durations[len(durations)/2]), "p50-ms/req")
	b.ReportMetric(ms(durations[(len(durations)*99)/100]), "p99-ms/req")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(durations)), "cpu-µs/obj")
}

// reviewOfOne is a review of one RedisCluster as the API server stores it
// after cueop converged it: created by kubectl, its finalizer and status
// written by cueop.
func reviewOfOne(b *testing.B) []byte {
	obj := `{"apiVersion":"cache.example.com/v1","kind":"RedisCluster",` +
		`"metadata":{"name":"rc-00001","namespace":"bench-scale-abcde","uid":"6f1c0e9e-8a4e-4c55-9f0e-0d7c2f1f9a11","resourceVersion":"123456","generation":1,` +
		`"creationTimestamp":"2026-12-02T04:00:00Z","labels":{"team":"a"},` +
		`"managedFields":[` +
		`{"manager":"bench","operation":"Apply","apiVersion":"cache.example.com/v1","time":"2026-12-02T04:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:replicas":{},"f:version":{}}}},` +
		`{"manager":"cueop","operation":"Apply","apiVersion":"cache.example.com/v1","time":"2026-12-02T04:00:03Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Reconciling\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Stalled\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:revision":{},"f:inputsDigest":{}}},"subresource":"status"}]},` +
		`"spec":{"replicas":3,"version":"7.0"},` +
		`"status":{"readyReplicas":3,"observedGeneration":1,"revision":"d4aa74a5df","inputsDigest":"cueop-inputs-1:0123456789abcdef0123456789abcdef",` +
		`"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"every child is ready","observedGeneration":1,"lastTransitionTime":"2026-12-02T04:00:03Z"},` +
		`{"type":"Reconciling","status":"False","reason":"Converged","message":"every child is applied at revision d4aa74a5df","observedGeneration":1,"lastTransitionTime":"2026-12-02T04:00:03Z"},` +
		`{"type":"Stalled","status":"False","reason":"Converged","message":"","observedGeneration":1,"lastTransitionTime":"2026-12-02T04:00:03Z"}]}}`
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "bench", DesiredAPIVersion: "cache.example.com/v2", Objects: []runtime.RawExtension{{Raw: []byte(obj)}}}})
	if err != nil {
		b.Fatal(err)
	}
	return body
}
