package baseline

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// ControllerName names the controller (and its metrics and work queue).
const ControllerName = "rediscluster-baseline"

// indexOwner indexes Pods by the name of the RedisCluster controlling them.
const indexOwner = ".metadata.controller"

// Reconciler is the course chapter's Reconcile done right: one Pod per
// index (not "create len-missing Pods"), a ConfigMap and a Service, each
// written with server-side apply only when the cached live object differs;
// status counted from ready Pods and written only when it changed; no
// periodic requeue (watches on the children wake it).
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
}

// Reconcile converges one RedisCluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rc := &RedisCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, rc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the garbage collector deletes the children
	}
	Default(rc)
	want := Desired(rc)
	var errs []error

	cm := &corev1.ConfigMap{}
	if found, err := r.get(ctx, rc.Namespace, *want.ConfigMap.Name, cm); err != nil {
		return ctrl.Result{}, err
	} else if !found || !ConfigMapInSync(want.ConfigMap, cm) {
		errs = append(errs, r.apply(ctx, want.ConfigMap))
	}
	svc := &corev1.Service{}
	if found, err := r.get(ctx, rc.Namespace, *want.Service.Name, svc); err != nil {
		return ctrl.Result{}, err
	} else if !found || !ServiceInSync(want.Service, svc) {
		errs = append(errs, r.apply(ctx, want.Service))
	}

	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(rc.Namespace), client.MatchingFields{indexOwner: rc.Name}); err != nil {
		return ctrl.Result{}, err
	}
	byName := make(map[string]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		if p := &pods.Items[i]; metav1.IsControlledBy(p, rc) {
			byName[p.Name] = p
		}
	}
	wanted := make(map[string]bool, len(want.Pods))
	for _, p := range want.Pods {
		wanted[*p.Name] = true
		live := byName[*p.Name]
		if live != nil && live.DeletionTimestamp != nil {
			continue // recreated once it is gone
		}
		if live == nil || !PodInSync(p, live) {
			errs = append(errs, r.apply(ctx, p))
		}
	}
	for name, p := range byName {
		if !wanted[name] && p.DeletionTimestamp == nil {
			errs = append(errs, client.IgnoreNotFound(r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})))
		}
	}

	st := ComputeStatus(rc, byName)
	if !equality.Semantic.DeepEqual(st, rc.Status) {
		errs = append(errs, r.applyStatus(ctx, rc, st))
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// get reads an object the baseline manages from the cache.
func (r *Reconciler) get(ctx context.Context, ns, name string, obj client.Object) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func (r *Reconciler) apply(ctx context.Context, obj runtime.ApplyConfiguration) error {
	return r.Client.Apply(ctx, obj, client.FieldOwner(FieldManager), client.ForceOwnership)
}

// applyStatus applies the status subresource with an object holding only
// the identity and the status.
func (r *Reconciler) applyStatus(ctx context.Context, rc *RedisCluster, st RedisClusterStatus) error {
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GroupVersion.String(), "kind": "RedisCluster",
		"metadata": map[string]any{"name": rc.Name, "namespace": rc.Namespace},
		"status":   status,
	}}
	err = r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("RedisCluster %s/%s: status: %w", rc.Namespace, rc.Name, err)
	}
	return nil
}

// ManagerOptions are the manager options the baseline needs: its scheme,
// and a cache that holds only its own children (by label), without
// managedFields (the InSync functions compare typed fields), scoped to
// namespace unless it is empty.
func ManagerOptions(namespace string) ctrl.Options {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(AddToScheme(scheme))
	own := labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByValue})
	opts := ctrl.Options{Scheme: scheme}
	opts.Cache = cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:       {Label: own},
			&corev1.ConfigMap{}: {Label: own},
			&corev1.Service{}:   {Label: own},
		},
	}
	if namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return opts
}

// Setup registers the controller with mgr: reconcile a RedisCluster when it
// or a child it controls changes, maxConcurrent at a time.
func Setup(mgr ctrl.Manager, maxConcurrent int) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, indexOwner, func(o client.Object) []string {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.APIVersion != GroupVersion.String() || ref.Kind != "RedisCluster" {
			return nil
		}
		return []string{ref.Name}
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&RedisCluster{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(&Reconciler{Client: mgr.GetClient()})
}
