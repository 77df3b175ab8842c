package operator

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// holders answers a load who holds a kind's claims already: the kinds
// this operator serves, then the CRD in the cluster (its kind and the
// package it was applied for). A kind served by its own package under
// the same identity asks the API server nothing.
func (o *Operator) holders(ctx context.Context) template.Holders {
	o.mu.Lock()
	served := make([]template.Holding, 0, len(o.kinds))
	for name, kc := range o.kinds {
		served = append(served, template.Holding{Package: name, Kind: kc.rec.Kind().Resource.ID(), CRD: kc.crdName})
	}
	o.mu.Unlock()
	var reader client.Reader
	switch {
	case o.mgr != nil:
		reader = o.mgr.GetAPIReader()
	case o.conv != nil: // a sharded replica's conversion loader (serveReplicaConversion)
		reader = o.conv.reader
	}
	return func(kindID, crdName string) []template.Holding {
		var out []template.Holding
		own := false
		for _, h := range served {
			if h.Kind == kindID || h.CRD == crdName {
				out = append(out, h)
				own = own || (h.Kind == kindID && h.CRD == crdName)
			}
		}
		if own {
			return out
		}
		if reader == nil {
			return out
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := reader.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			if !apierrors.IsNotFound(err) {
				o.log.Error(err, "templates: could not read the CRD to tell who holds it; a claim it would decide refuses every claimant", "crd", crdName)
			}
			return out
		}
		return append(out, template.Holding{
			Package: crd.Annotations[wellknown.AnnotationPackage],
			Kind:    crd.Spec.Names.Kind + "." + crd.Spec.Group,
			CRD:     crdName,
		})
	}
}
