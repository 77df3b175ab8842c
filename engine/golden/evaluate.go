package golden

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/tools/txtar"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// Evaluate renders the case in ar and returns the sections it produces:
// children.yaml and status.yaml, or error.txt when the render fails.
func Evaluate(set *template.Set, k *template.Kind, ar *txtar.Archive, opts render.Options) (map[string][]byte, error) {
	sections := map[string][]byte{}
	for _, f := range ar.Files {
		sections[f.Name] = f.Data
	}
	parentData, ok := sections[SectionParent]
	if !ok {
		return nil, fmt.Errorf("no %s section", SectionParent)
	}
	parent, err := ParseParent(parentData, k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SectionParent, err)
	}
	observed, err := ParseObjects(sections[SectionObserved])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SectionObserved, err)
	}
	referenced, err := ParseObjects(sections[SectionReferenced])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SectionReferenced, err)
	}
	converted, ok, err := evaluateConverted(set, k, ar, parent)
	if err != nil || ok && converted[SectionError] != nil {
		return converted, err
	}
	res, byID, err := renderCase(k, parent, observed, referenced, opts)
	var rerr *render.Error
	if errors.As(err, &rerr) {
		return map[string][]byte{SectionError: []byte(Relative(set.Root, rerr.Error()) + "\n")}, nil
	}
	if err != nil {
		return nil, err
	}
	applied, held := res.Children, []byte(nil)
	if k.Waves {
		applied, held = gateCase(res, byID) // held.go
	}
	out := map[string][]byte{SectionChildren: ChildrenYAML(applied), SectionStatus: StatusYAML(res)}
	if held != nil {
		out[SectionHeld] = held
	}
	maps.Copy(out, converted)
	return out, nil
}

// RenderObserved renders parent with live children that are not yet keyed
// by child id: a first render without them names the ids, then each live
// object is matched to the child with its group, kind and name (a child is
// the same object at any version).
func RenderObserved(k *template.Kind, parent *unstructured.Unstructured, live []*unstructured.Unstructured, opts render.Options) (*render.Result, error) {
	return RenderCase(k, parent, live, nil, opts)
}

// RenderCase is RenderObserved with the objects the template may reference
// (referenced.go). A parent at a spoke version is converted to the hub
// first, as the API server serves it to the operator.
func RenderCase(k *template.Kind, parent *unstructured.Unstructured, live, referenced []*unstructured.Unstructured, opts render.Options) (*render.Result, error) {
	res, _, err := renderCase(k, parent, live, referenced, opts)
	return res, err
}

// renderCase is RenderCase that also returns the live objects by child id.
func renderCase(k *template.Kind, parent *unstructured.Unstructured, live, referenced []*unstructured.Unstructured, opts render.Options) (*render.Result, map[string]*unstructured.Unstructured, error) {
	parent, err := ToHub(k, parent)
	if err != nil {
		return nil, nil, &render.Error{Reason: wellknown.ReasonInvalidSpec, Messages: []string{err.Error()}}
	}
	in, err := resolveReferences(k, parent, referenced, opts)
	if err != nil {
		return nil, nil, err
	}
	first, err := render.RenderInputs(in, opts)
	if err != nil || len(live) == 0 {
		return first, nil, err
	}
	ids := map[string]string{}
	for _, c := range first.Children {
		ids[objectKey(c.Object)] = c.ID
	}
	observed := map[string]*unstructured.Unstructured{}
	for _, o := range live {
		id, ok := ids[objectKey(o)]
		if !ok {
			id = o.GetLabels()[wellknown.LabelID]
		}
		if id == "" {
			return nil, nil, fmt.Errorf("observed %s %s matches no child (no child renders it and it has no %s label)", o.GetKind(), o.GetName(), wellknown.LabelID)
		}
		observed[id] = o
	}
	in.Observed = observed
	res, err := render.RenderInputs(in, opts)
	return res, observed, err
}

// served tells whether k serves version (a Kind built without versions
// serves its resource's).
func served(k *template.Kind, version string) bool {
	return version == k.Resource.Version || k.Version(version) != nil
}

func objectKey(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().Group + "/" + o.GetKind() + "/" + o.GetName()
}

// ParseParent reads a CR and checks that it is of kind k at a version k
// serves. A CR without a namespace is put in "default", as kubectl would.
func ParseParent(data []byte, k *template.Kind) (*unstructured.Unstructured, error) {
	objs, err := ParseObjects(data)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("want exactly one object, found %d", len(objs))
	}
	return Parent(objs[0], k)
}

// Parent checks that p, a CR read from a file, is of kind k at a version
// k serves and has a name; one without a namespace is put in "default",
// as kubectl would.
func Parent(p *unstructured.Unstructured, k *template.Kind) (*unstructured.Unstructured, error) {
	if gvk := p.GroupVersionKind(); gvk.GroupKind() != k.Resource.GroupVersionKind().GroupKind() || !served(k, gvk.Version) {
		return nil, fmt.Errorf("%s %s is not a %s", gvk, p.GetName(), k.Resource.GroupVersionKind())
	}
	if p.GetName() == "" {
		return nil, fmt.Errorf("%s has no metadata.name", k.Resource.GroupVersionKind().Kind)
	}
	if p.GetNamespace() == "" {
		p.SetNamespace("default")
	}
	return p, nil
}

// ParseObjects reads a YAML stream of objects.
func ParseObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for i, doc := range splitYAML(data) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if string(bytes.TrimSpace(j)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		out = append(out, u)
	}
	return out, nil
}

func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t") == "---" {
			docs = append(docs, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, []byte(strings.Join(cur, "\n")))
}

// ChildrenYAML writes children as a YAML stream in id order, each headed by
// a comment with its id.
func ChildrenYAML(children []render.Child) []byte {
	var b bytes.Buffer
	for i, c := range children {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, _ := yaml.Marshal(c.Object.Object)
		fmt.Fprintf(&b, "# %s\n%s", c.ID, y)
	}
	return b.Bytes()
}

// StatusYAML writes the status and readiness of a render, and the
// template's own conditions when it gives some.
func StatusYAML(res *render.Result) []byte {
	out := map[string]any{"status": res.Status, "ready": res.Ready}
	if len(res.Conditions) > 0 {
		out["conditions"] = res.Conditions
	}
	y, _ := yaml.Marshal(out)
	return y
}

// Relative rewrites the templates root in msg as "templates/", however the
// root was spelled (absolute, or relative to the working directory), so
// that expected errors do not depend on where the tests run. Positions
// (file.cue:line:column) are written relative to the working directory
// when below it, so each is resolved from it and, when within root,
// rewritten as templates/<path within root>.
func Relative(root, msg string) string {
	wd, _ := os.Getwd()
	msg = cuePosition.ReplaceAllStringFunc(msg, func(pos string) string {
		file := pos[:strings.Index(pos, ".cue:")+len(".cue")]
		abs := file
		if !filepath.IsAbs(abs) {
			if wd == "" {
				return pos
			}
			abs = filepath.Join(wd, abs)
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return pos
		}
		return "templates/" + filepath.ToSlash(rel) + pos[len(file):]
	})
	msg = strings.ReplaceAll(msg, root+string(filepath.Separator), "templates/")
	if wd != "" {
		if rel, err := filepath.Rel(wd, root); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			msg = strings.ReplaceAll(msg, rel+string(filepath.Separator), "templates/")
		}
	}
	return msg
}

// cuePosition matches a CUE position, file.cue:line:column, the file
// absolute or relative.
var cuePosition = regexp.MustCompile(`[^\s(),"']*\.cue:\d+:\d+`)
