package reconcile

import (
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPartialKeepsWhatTheConverterNames: for every kind of the operator's
// scheme (client-go's and apiextensions/v1, operator.go), listed as
// listChildren lists it (typed list, struct copies, ExtractList), each
// top-level key K of the whole conversion comes out the same when only K is
// kept, and the partial conversion leaves the listed (cache's) object as it
// was.
func TestPartialKeepsWhatTheConverterNames(t *testing.T) {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(1), serializer.NewCodecFactory(s)).NilChance(0.1).NumElements(1, 2).MaxDepth(6)
	var kinds []string
	checked := 0
	for gvk := range s.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
		if !s.Recognizes(listGVK) {
			continue
		}
		lo, _ := s.New(listGVK)
		if _, err := meta.GetItemsPtr(lo); err != nil {
			continue // not a list of objects (APIGroupList)
		}
		if l, ok := lo.(client.ObjectList); !ok || !itemsCopied(l) {
			t.Errorf("%s: list items are not structs: listChildren deep-copies them (slower)", listGVK)
		}
		for round := 0; round < 3; round++ {
			obj, _ := s.New(gvk)
			f.Fill(obj)
			whole, err := toUnstructured(obj.DeepCopyObject(), gvk)
			if err != nil {
				continue // a random value the converter refuses
			}
			for key := range whole.Object {
				if key == "metadata" || key == "apiVersion" || key == "kind" {
					continue
				}
				cached := obj.DeepCopyObject()
				before := cached.DeepCopyObject()
				list, _ := s.New(listGVK)
				if err := meta.SetList(list, []runtime.Object{cached}); err != nil {
					t.Fatal(err)
				}
				got, _ := meta.ExtractList(list)
				u, err := viewOf(got[0], gvk, map[string]bool{key: true})
				if err != nil {
					t.Fatalf("%s: %v", gvk, err)
				}
				for k := range u.Object {
					if k != key && k != "metadata" && k != "apiVersion" && k != "kind" {
						t.Errorf("%s: the view of %q has %q too", gvk, key, k)
					}
				}
				if !reflect.DeepEqual(u.Object[key], whole.Object[key]) {
					t.Errorf("%s: key %q differs: partial %v, whole %v", gvk, key, u.Object[key], whole.Object[key])
				}
				if !reflect.DeepEqual(u.Object["metadata"], whole.Object["metadata"]) {
					t.Errorf("%s: metadata differs", gvk)
				}
				if !reflect.DeepEqual(cached, before) {
					t.Errorf("%s: viewOf changed the listed object", gvk)
				}
				checked++
			}
		}
		kinds = append(kinds, gvk.String())
	}
	sort.Strings(kinds)
	t.Logf("%d kinds, %d keys checked", len(kinds), checked)
}
