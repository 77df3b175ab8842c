package apply_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/apply"
)

const shapes = `
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: empty, annotations: {}, labels: {}}
  data: {}
- apiVersion: v1
  kind: Pod
  metadata: {name: shapes}
  spec:
    containers:
    - name: a
      image: busybox
      command: null
      resources: {}
      securityContext: {}
      imagePullPolicy: Always
      env:
      - {name: X, value: "1"}
      - name: "Y"
        valueFrom: {fieldRef: {fieldPath: metadata.name}}
      ports:
      - {containerPort: 53, protocol: UDP, name: dns-udp}
      - {containerPort: 53, name: dns-tcp}
      - {containerPort: 80.0, protocol: TCP}
      resources:
        limits: {cpu: "0.5", memory: 1Gi}
    - name: b
      image: busybox
    volumes:
    - {name: e, emptyDir: {}}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d}
  spec:
    selector: {matchLabels: {app: d}}
    template:
      metadata: {labels: {app: d}}
      spec:
        containers:
        - name: a
          image: busybox
          ports: [{containerPort: 8080}]
- apiVersion: v1
  kind: Service
  metadata: {name: s}
  spec:
    type: ClusterIP
    selector: {app: d}
    ports: [{port: 80, targetPort: 8080, name: http}, {port: 53, protocol: UDP, name: dns}]
`

// TestShapes checks the no-op rule on shapes whose field sets are easy to get
// wrong: empty maps, null, floats as integers, list map keys with defaulted
// fields, atomic maps and lists.
func TestShapes(t *testing.T) {
	e := newEnv(t)
	a := &apply.Applier{Client: e.c}
	var objs []map[string]any
	if err := yaml.Unmarshal([]byte(shapes), &objs); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		desired := &unstructured.Unstructured{Object: o}
		desired.SetNamespace(e.ns)
		t.Run(desired.GetName(), func(t *testing.T) {
			logManagedFields(t, e.mustApply(t, a, desired, apply.Created))
			e.wantNeeds(t, a, desired, false)
		})
	}
}
