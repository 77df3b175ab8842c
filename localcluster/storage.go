package localcluster

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The local control plane provisions PersistentVolumeClaims, so that a
// template with volumes works out of the box: two StorageClasses of its own
// provisioner, and a provisioner (in the process that started the cluster)
// that binds each claim of them to a volume of its own (a hostPath PV; kwok's
// Pods mount nothing). Both binding modes work as on a real cluster.
const (
	// StorageClassDefault is the default StorageClass: WaitForFirstConsumer,
	// as on kind, GKE, EKS and AKS: a claim binds once the scheduler picked a
	// node for its first Pod, and its volume is on that node.
	StorageClassDefault = "standard"
	// StorageClassImmediate binds a claim as soon as it is created.
	StorageClassImmediate = "immediate"
	// Provisioner is the provisioner name of both classes.
	Provisioner = "localcluster.cueop.dev/hostpath"

	annDefaultClass  = "storageclass.kubernetes.io/is-default-class"
	annSelectedNode  = "volume.kubernetes.io/selected-node"
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

func storageClasses() []*storagev1.StorageClass {
	class := func(name string, mode storagev1.VolumeBindingMode, ann map[string]string) *storagev1.StorageClass {
		return &storagev1.StorageClass{
			ObjectMeta:        metav1.ObjectMeta{Name: name, Annotations: ann},
			Provisioner:       Provisioner,
			ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode: ptr.To(mode),
		}
	}
	return []*storagev1.StorageClass{
		class(StorageClassDefault, storagev1.VolumeBindingWaitForFirstConsumer, map[string]string{annDefaultClass: "true"}),
		class(StorageClassImmediate, storagev1.VolumeBindingImmediate, nil),
	}
}

// startStorage creates the StorageClasses and runs the provisioner until
// ctx ends.
func (c *Cluster) startStorage(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for _, sc := range storageClasses() {
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("StorageClass %s: %w", sc.Name, err)
		}
	}
	logFile, err := os.Create(filepath.Join(c.LogDir, "provisioner.log"))
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { logFile.Close() })
	p := &provisioner{cs: cs, modes: map[string]storagev1.VolumeBindingMode{}, log: log.New(logFile, "", log.LstdFlags)}
	for _, sc := range storageClasses() {
		p.modes[sc.Name] = *sc.VolumeBindingMode
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	handle := func(fn func(context.Context, any)) toolscache.ResourceEventHandler {
		return toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { fn(ctx, obj) },
			UpdateFunc: func(_, obj any) { fn(ctx, obj) },
		}
	}
	if _, err := f.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(handle(p.claim)); err != nil {
		return err
	}
	if _, err := f.Core().V1().PersistentVolumes().Informer().AddEventHandler(handle(p.volume)); err != nil {
		return err
	}
	f.Start(ctx.Done())
	return nil
}

// provisioner binds the claims of its StorageClasses.
type provisioner struct {
	cs    kubernetes.Interface
	modes map[string]storagev1.VolumeBindingMode // by StorageClass
	log   *log.Logger
}

// claim makes a volume for a pending claim of one of its classes: at once
// (Immediate) or once the scheduler selected a node (WaitForFirstConsumer),
// on that node. The PV names the claim; kube-controller-manager binds them.
func (p *provisioner) claim(ctx context.Context, obj any) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || pvc.Spec.StorageClassName == nil {
		return
	}
	mode, ours := p.modes[*pvc.Spec.StorageClassName]
	node := pvc.Annotations[annSelectedNode]
	if !ours || (mode == storagev1.VolumeBindingWaitForFirstConsumer && node == "") {
		return
	}
	pv := volumeFor(pvc, node)
	_, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	switch {
	case err == nil:
		p.log.Printf("PersistentVolumeClaim %s/%s: created PersistentVolume %s (node %q)", pvc.Namespace, pvc.Name, pv.Name, node)
	case !apierrors.IsAlreadyExists(err):
		p.log.Printf("PersistentVolumeClaim %s/%s: %v", pvc.Namespace, pvc.Name, err)
	}
}

// volume deletes a volume of its own once its claim is gone (reclaim
// policy Delete).
func (p *provisioner) volume(ctx context.Context, obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || pv.Annotations[annProvisionedBy] != Provisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return
	}
	err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		p.log.Printf("PersistentVolume %s: delete: %v", pv.Name, err)
	}
}

func volumeFor(pvc *corev1.PersistentVolumeClaim, node string) *corev1.PersistentVolume {
	name := "pvc-" + string(pvc.UID)
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		size = resource.MustParse("1Gi")
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			StorageClassName:              *pvc.Spec.StorageClassName,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/localcluster/" + name},
			},
		},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
			}}}},
		}}
	}
	return pv
}
