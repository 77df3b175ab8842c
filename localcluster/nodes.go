package localcluster

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Fake nodes carry this annotation (kwok manages the nodes that have it) and the
// label NodeLabel=NodeLabelValue.
const (
	nodeAnnotation = "kwok.x-k8s.io/node"
	NodeLabel      = "type"
	NodeLabelValue = "kwok"
)

// createNodes creates the fake nodes and waits until each is Ready and has no
// taint left, i.e. the scheduler may bind pods to it.
func (c *Cluster) createNodes(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for i := range c.opts.Nodes {
		_, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", fakeNode(i).Name, err)
		}
	}
	var notReady string
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true,
		func(ctx context.Context) (bool, error) {
			nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{
				LabelSelector: NodeLabel + "=" + NodeLabelValue})
			if err != nil {
				return false, nil //nolint:nilerr // retry until ctx ends
			}
			notReady = unschedulable(nodes.Items)
			return notReady == "" && len(nodes.Items) == c.opts.Nodes, nil
		})
	if err != nil {
		return fmt.Errorf("fake nodes not ready (%s): %w", notReady, err)
	}
	return nil
}

// unschedulable returns the name and state of the first node that is not Ready
// or still tainted, or "" if there is none.
func unschedulable(nodes []corev1.Node) string {
	for _, n := range nodes {
		if len(n.Spec.Taints) > 0 {
			return fmt.Sprintf("node %s tainted %s", n.Name, n.Spec.Taints[0].Key)
		}
		if !nodeReady(n) {
			return fmt.Sprintf("node %s not Ready", n.Name)
		}
	}
	return ""
}

func nodeReady(n corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fakeNode returns the i-th fake node: big enough for thousands of pods, with a
// pod CIDR of its own (10.128+i.0.0/16) that kwok takes pod IPs from.
func fakeNode(i int) *corev1.Node {
	name := fmt.Sprintf("kwok-node-%d", i)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("4000Gi"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
	cidr := fmt.Sprintf("10.%d.0.0/16", 128+i%128)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{nodeAnnotation: "fake"},
			Labels: map[string]string{
				NodeLabel:              NodeLabelValue,
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: runtime.GOARCH,
			},
		},
		Spec:   corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}
