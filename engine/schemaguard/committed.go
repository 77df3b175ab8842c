package schemaguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
)

// CheckCommitted compares committed, the CRD of k as it is committed at
// path, with next, the CRD of k the templates generate: nil when next
// changes nothing breaking in a version committed serves; otherwise the
// Refusal, its changes located in k, not counted (Stored -1), naming path
// and acknowledge (how to let the change through; "" for no way).
func CheckCommitted(k *template.Kind, committed, next *apiextensionsv1.CustomResourceDefinition, path, acknowledge string) *schemacompat.Refusal {
	breaking := locatedBreaking(k, schemacompat.CompareCRDs(committed, next))
	if len(breaking) == 0 {
		return nil
	}
	return &schemacompat.Refusal{Kind: k.Resource.ID(), Changes: breaking, Stored: -1, Source: path, Acknowledge: acknowledge}
}

// CommittedCRD is a CRD committed at Path.
type CommittedCRD struct {
	Path string
	CRD  *apiextensionsv1.CustomResourceDefinition
}

// Committed are the CustomResourceDefinitions in the YAML files (.yaml,
// .yml, several documents each) under dir, by metadata.name; other
// documents are skipped. A dir that does not exist holds none.
func Committed(dir string) (map[string][]CommittedCRD, error) {
	out := map[string][]CommittedCRD{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		crds, err := readCRDs(path)
		for _, crd := range crds {
			out[crd.Name] = append(out[crd.Name], CommittedCRD{path, crd})
		}
		return err
	})
	return out, err
}

// readCRDs are the CustomResourceDefinitions among the documents of the
// YAML file at path. A document that is not YAML is an error naming the
// file and the document: it may be a committed CRD (a merge left
// conflict markers in it), and skipping it would pass the kind's schema
// change unchecked.
func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []*apiextensionsv1.CustomResourceDefinition
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		crd, err := crdDocument(doc, n)
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		if crd != nil {
			out = append(out, crd)
		}
	}
}

// crdDocument is the CustomResourceDefinition doc holds; nil when doc is
// another document (a list such as a JSON patch, a scalar, another
// object). n is the document's number in its file.
func crdDocument(doc []byte, n int) (*apiextensionsv1.CustomResourceDefinition, error) {
	var parsed any
	if err := yaml.Unmarshal(doc, &parsed); err != nil {
		return nil, fmt.Errorf("document %d is not YAML: %w", n, err)
	}
	var tm metav1.TypeMeta
	if _, object := parsed.(map[string]any); !object || yaml.Unmarshal(doc, &tm) != nil ||
		tm.Kind != "CustomResourceDefinition" || tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
		return nil, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(doc, crd); err != nil {
		return nil, err
	}
	return crd, nil
}
