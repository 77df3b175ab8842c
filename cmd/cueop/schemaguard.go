package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
)

// allowBreakingFlag adds --allow-breaking to cmd: the kinds (Kind.group)
// whose breaking schema change is deliberate.
func allowBreakingFlag(cmd *cobra.Command, allow *[]string) {
	cmd.Flags().StringSliceVar(allow, "allow-breaking", nil,
		"kinds (Kind.group, comma-separated or repeated) whose breaking schema change against the committed CRD is deliberate")
}

// checkCommittedCRDs compares each kind's CRD, crds[i] of set.Kinds[i],
// with the one committed under dir: the CRD of the same metadata.name in
// any YAML file there (committedCRDs), whatever the file is named. It
// refuses a breaking change to a version the committed CRD serves
// (schemacompat), unless the kind is in allow. Each acknowledged change is
// written to w. A kind with no committed CRD is new to it; with
// reportMissing it is written to w as a warning (vet: its schema is not
// guarded).
func checkCommittedCRDs(w io.Writer, set *template.Set, crds []*apiextensionsv1.CustomResourceDefinition, dir string, allow []string, reportMissing bool) error {
	committed, err := committedCRDs(dir)
	if err != nil {
		return err
	}
	var errs []error
	for i, crd := range crds {
		k := set.Kinds[i]
		id := k.Resource.Kind + "." + k.Resource.Group
		found := committed[crd.Name]
		if len(found) == 0 && reportMissing {
			fmt.Fprintf(w, "warn %s: no committed CRD named %s in a YAML file under %s: its schema change is not checked (a new kind, or --crds is not where the CRDs are committed)\n", id, crd.Name, dir)
		}
		for _, c := range found {
			breaking := schemacompat.Breaking(schemacompat.CompareCRDs(c.crd, crd))
			if len(breaking) == 0 {
				continue
			}
			crdgen.Locate(k, breaking)
			r := &schemacompat.Refusal{Kind: id, Changes: breaking, Stored: -1, Source: c.path, Acknowledge: "--allow-breaking=" + id}
			if slices.Contains(allow, id) {
				fmt.Fprintf(w, "warn %s: breaking schema change against %s, acknowledged (--allow-breaking)%s\n", id, c.path, r.Details())
				continue
			}
			errs = append(errs, r)
		}
	}
	return errors.Join(errs...)
}

// committedCRD is a CRD committed at path.
type committedCRD struct {
	path string
	crd  *apiextensionsv1.CustomResourceDefinition
}

// committedCRDs are the CustomResourceDefinitions in the YAML files
// (.yaml, .yml, several documents each) under dir, by metadata.name; other
// documents are skipped. A dir that does not exist holds none.
func committedCRDs(dir string) (map[string][]committedCRD, error) {
	out := map[string][]committedCRD{}
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
			out[crd.Name] = append(out[crd.Name], committedCRD{path, crd})
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
		var parsed any
		if err := yaml.Unmarshal(doc, &parsed); err != nil {
			return out, fmt.Errorf("%s: document %d is not YAML: %w", path, n, err)
		}
		var tm metav1.TypeMeta
		if _, object := parsed.(map[string]any); !object || yaml.Unmarshal(doc, &tm) != nil ||
			tm.Kind != "CustomResourceDefinition" || tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			continue // a list (a JSON patch), a scalar, another object
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, crd)
	}
}
