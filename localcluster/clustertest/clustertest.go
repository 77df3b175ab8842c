// Package clustertest runs the tests of one test binary against one local
// Kubernetes control plane (see package localcluster), with a fresh namespace
// per test:
//
//	func TestMain(m *testing.M) {
//		clustertest.Main(m, localcluster.Options{})
//	}
//
//	func TestSomething(t *testing.T) {
//		ns := clustertest.Namespace(t)
//		c, err := client.New(clustertest.Config(), client.Options{})
//		...
//	}
//
// If the control plane cannot start, for instance because its binaries were not
// built (`make k8s-bins`), every test of the binary fails: none is skipped.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cueop/cueop/engine/worker"
	"github.com/cueop/cueop/localcluster"
)

var (
	cluster   *localcluster.Cluster
	clientset *kubernetes.Clientset
	options   localcluster.Options
)

// Main starts a cluster as opts describe, runs the tests, stops the cluster and
// exits with the tests' exit code. Call it from TestMain. When a test fails, it
// keeps the cluster's directory and prints where its logs are. On SIGINT or
// SIGTERM it stops the cluster and exits. The test binary serves as the
// operator's render worker too (worker.Main): started as one, it serves and
// exits before any cluster starts.
func Main(m *testing.M, opts localcluster.Options) {
	worker.Main()
	os.Exit(run(m, opts))
}

func run(m *testing.M, opts localcluster.Options) int {
	c, err := start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: %v\nFAIL\n", err)
		return 1
	}
	cluster, options = c, opts
	defer stopOnSignal(c)()
	code := m.Run()
	if code != 0 {
		c.Keep()
		fmt.Fprintf(os.Stderr, "clustertest: control plane logs in %s\n", c.LogDir)
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: %v\n", err)
		code = max(code, 1)
	}
	return code
}

// start starts the cluster; SIGINT or SIGTERM cancels the start.
func start(opts localcluster.Options) (*localcluster.Cluster, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	if clientset, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// stopOnSignal stops c and exits when the test binary gets SIGINT or SIGTERM,
// until the returned function is called.
func stopOnSignal(c *localcluster.Cluster) (cancel func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		c.Keep()
		fmt.Fprintf(os.Stderr, "clustertest: %v: stopping the control plane (logs in %s)\n", sig, c.LogDir)
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "clustertest: %v\n", err)
		}
		os.Exit(1)
	}()
	return func() {
		signal.Stop(sigs)
		close(sigs)
	}
}

// Cluster returns the cluster that Main started.
func Cluster() *localcluster.Cluster {
	if cluster == nil {
		panic("clustertest: no cluster: call clustertest.Main from TestMain")
	}
	return cluster
}

// Config returns a copy of the cluster's admin *rest.Config.
func Config() *rest.Config {
	return rest.CopyConfig(Cluster().Config)
}

// Namespace creates a namespace named after the test, and deletes it when the
// test ends. With the controller-manager running, it returns once the
// namespace's default ServiceAccount exists, so that Pods can be created in it.
func Namespace(t testing.TB) string {
	t.Helper()
	Cluster()
	ctx := context.Background()
	ns, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("clustertest: create namespace: %v", err)
	}
	t.Cleanup(func() { deleteNamespace(t, ns.Name) })
	if !options.ControlPlaneOnly {
		waitServiceAccount(t, ns.Name)
	}
	return ns.Name
}

func deleteNamespace(t testing.TB, name string) {
	err := clientset.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("clustertest: delete namespace %s: %v", name, err)
	}
}

func waitServiceAccount(t testing.TB, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true,
		func(ctx context.Context) (bool, error) {
			_, err := clientset.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
	if err != nil {
		t.Fatalf("clustertest: namespace %s: no default ServiceAccount: %v", ns, err)
	}
}

var notName = regexp.MustCompile(`[^a-z0-9]+`)

// namePrefix turns a test name into a namespace GenerateName: lower case
// letters, digits and dashes, at most 40 characters, ending with a dash.
func namePrefix(test string) string {
	s := notName.ReplaceAllString(strings.ToLower(test), "-")
	s = strings.Trim(s[:min(len(s), 40)], "-")
	if s == "" {
		s = "test"
	}
	return s + "-"
}
