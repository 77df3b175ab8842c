package operator_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/localcluster/clustertest"
)

// memoYAML is a Memo at v1 of ns with a text of text bytes.
func memoYAML(ns, name string, text int) string {
	return "apiVersion: annot.example.com/v1\nkind: Memo\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {size: 1, text: x" + strings.Repeat("x", text) + "}\n"
}

// TestConversionBesideSlowClients: while 16 connections to the webhook
// have sent a review's headers and one byte of its body (more than its 4
// slots), the API server's reads at v2 convert (before: the slow bodies
// held every slot and the reads failed with "the server has received too
// many requests").
func TestConversionBesideSlowClients(t *testing.T) {
	ns := clustertest.Namespace(t)
	conv := startMemos(t, ns)
	u, err := url.Parse(conv.Endpoint.URL)
	must(t, err)
	for range 16 {
		c, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // a hostile client
		must(t, err)
		defer c.Close()
		_, err = fmt.Fprintf(c, "POST /convert HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		must(t, err)
	}
	mustKubectl(t, memoYAML(ns, "a", 1)+"---\n"+memoYAML(ns, "b", 1), "create", "-f", "-")
	if _, err := getAt(t, "memos.v2.annot.example.com", ns, "a"); err != nil {
		t.Errorf("a read at v2 beside slow clients: %v", err)
	}
	if out, err := kubectl(t, "", "get", "memos.v2.annot.example.com", "-n", ns, "-o", "name"); err != nil || !strings.Contains(out, "/b") {
		t.Errorf("a list at v2 beside slow clients: %v: %s", err, out)
	}
}

// TestConversionBesideOneSourcesConnections: one client (127.0.0.2)
// keeps 1,100 connections to the webhook open, opening another as soon
// as one is closed, and sends nothing on them: more than the 256 the
// webhook holds at once, with the rest waiting in the accept queue ahead
// of the API server's. The webhook holds 32 of them (its bound per
// source address) and closes the others as soon as accepted, so the API
// server's first conversions, a create and reads at v2, are answered
// (before: the client held all 256 and the queue, each connection for the
// 10 s of its handshake, and the API server's connection waited past its
// 30 s).
func TestConversionBesideOneSourcesConnections(t *testing.T) {
	ns := clustertest.Namespace(t)
	conv := startMemos(t, ns)
	u, err := url.Parse(conv.Endpoint.URL)
	must(t, err)
	const workers = 1100
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var dialed sync.WaitGroup
	dialed.Add(workers)
	defer func() { cancel(); wg.Wait() }()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
			first := true
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", u.Host)
				if first {
					first = false
					dialed.Done()
				}
				if err == nil {
					stop := context.AfterFunc(ctx, func() { c.Close() })
					_, _ = c.Read(make([]byte, 1)) // until the webhook closes it
					stop()
					c.Close()
				}
				select { // the client's pace of reconnects, not a wait for the webhook
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	dialed.Wait()
	if out, err := kubectl(t, memoYAML(ns, "a", 1)+"---\n"+memoYAML(ns, "b", 1), "create", "-f", "-"); err != nil {
		t.Fatalf("create beside one source's connections: %v: %s", err, out)
	}
	if _, err := getAt(t, "memos.v2.annot.example.com", ns, "a"); err != nil {
		t.Errorf("a read at v2 beside one source's connections: %v", err)
	}
	if out, err := kubectl(t, "", "get", "memos.v2.annot.example.com", "-n", ns, "-o", "name"); err != nil || !strings.Contains(out, "/b") {
		t.Errorf("a list at v2 beside one source's connections: %v: %s", err, out)
	}
}

// TestForgedReviewWritesNothing: a ConversionReview the API server never
// sent, holding another tenant's Memo (its namespace, name, uid and
// resourceVersion) with a text too large to convert whole, writes no
// Convertible condition and no Event on it: the operator checks a
// refusal against the CR as the API server shows it (before: it wrote
// Convertible=False AnnotationTooLarge and a Warning Event there). A real
// refusal, reported after it, is written.
func TestForgedReviewWritesNothing(t *testing.T) {
	ns, other := clustertest.Namespace(t), clustertest.Namespace(t)
	conv := startMemos(t, ns)
	mustKubectl(t, memoYAML(other, "theirs", 1), "create", "-f", "-")
	theirs := mustGetAt(t, "memos.v1.annot.example.com", other, "theirs")

	forged := theirs.DeepCopy()
	forged.Object["spec"] = map[string]any{"size": int64(1), "text": strings.Repeat("x", 300<<10)}
	raw, err := forged.MarshalJSON()
	must(t, err)
	body, err := json.Marshal(&apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "forged", DesiredAPIVersion: "annot.example.com/v2",
			Objects: []runtime.RawExtension{{Raw: raw}}}})
	must(t, err)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a hostile client
	resp, err := client.Post(conv.Endpoint.URL, "application/json", bytes.NewReader(body))
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("forged review: %s", resp.Status)
	}

	// A real refusal queued after the forged one: once it is written, the
	// forged one has been handled (one writer, in order).
	mustKubectl(t, memoYAML(ns, "big", 300<<10), "create", "-f", "-")
	eventually(t, 60*time.Second, func() string {
		if c := conditionOf(mustGetAt(t, "memos.v1.annot.example.com", ns, "big"), wellknown.ConditionConvertible); c == nil || c["status"] != "False" {
			return "big's Convertible condition: " + jsonText(c)
		}
		return ""
	})
	if c := conditionOf(mustGetAt(t, "memos.v1.annot.example.com", other, "theirs"), wellknown.ConditionConvertible); c != nil {
		t.Errorf("a forged review wrote on another tenant's Memo: %s", jsonText(c))
	}
	if out := mustKubectl(t, "", "get", "events", "-n", other, "--field-selector", "reason="+wellknown.ReasonAnnotationTooLarge, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("a forged review recorded Events in %s: %s", other, out)
	}
}

// TestMarkerTooLargeFailsNoOtherRead: a Memo whose annotations leave no
// room even for the conversion-incomplete marker reads at v2 without its
// text and its largest annotation, marked, and every other Memo lists at
// v2 (before: its conversion failed, and with it every list at v2).
func TestMarkerTooLargeFailsNoOtherRead(t *testing.T) {
	ns := clustertest.Namespace(t)
	startMemos(t, ns)
	full := "apiVersion: annot.example.com/v1\nkind: Memo\nmetadata: {name: full, namespace: " + ns + ", annotations: {pad: p" +
		strings.Repeat("p", 256<<10-3-21) + "}}\nspec: {size: 1, text: " + strings.Repeat("x", 1000) + "}\n"
	mustKubectl(t, memoYAML(ns, "small", 1)+"---\n"+full, "create", "-f", "-")
	eventually(t, 30*time.Second, func() string {
		out, err := kubectl(t, "", "get", "memos.v2.annot.example.com", "-n", ns, "-o", "name")
		if err != nil || !strings.Contains(out, "/small") || !strings.Contains(out, "/full") {
			return fmt.Sprintf("list at v2: %v: %.300s", err, out)
		}
		return ""
	})
	read := mustGetAt(t, "memos.v2.annot.example.com", ns, "full")
	if a := read.GetAnnotations(); a["cueop.dev/conversion-incomplete.v1"] != "1 fields, 1 annotations" || a["pad"] != "" {
		t.Errorf("full at v2: annotations %.200v, want pad dropped and the marker", a)
	}
}
