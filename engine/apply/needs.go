// The no-op rule (doc.go): NeedsApply decides from the live object the
// cache holds whether an apply would change anything: the applied hash, then
// cueop's field set, typed by the kind's schema or, for a kind without one,
// compared by path prefix and by value (deduced).
//
// It must not send a request: it is pure, no I/O.

package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/cueop/cueop/engine/kschema"
	"github.com/cueop/cueop/engine/wellknown"
	"github.com/cueop/cueop/internal/jsonenc"
)

// plan is what Apply would send and why; why is "" when nothing would
// change.
type plan struct {
	object *unstructured.Unstructured
	why    string
	// skew is set when no schema at hand types the object (a field the
	// compiled client-go schema or the TypeConverter does not know: a newer
	// cluster, a changed CRD). Then the apply is sent, and the
	// resourceVersion it returns tells whether it changed anything.
	skew     bool
	hash     string // of the desired fields (stamp)
	key      memoKey
	memoable bool
}

// NeedsApply reports whether applying desired would change live, and why.
// live is the object as the informer cache holds it, nil when absent. It
// sends no request; the rule is in the package documentation.
func (a *Applier) NeedsApply(desired, live *unstructured.Unstructured) (bool, string, error) {
	p, err := a.plan(desired, live)
	if err != nil {
		return false, "", fmt.Errorf("%s: %w", subject(desired), err)
	}
	return p.why != "", p.why, nil
}

func (a *Applier) plan(desired, live *unstructured.Unstructured) (plan, error) {
	obj, hash, err := stamp(desired)
	if err != nil {
		return plan{}, err
	}
	p := plan{object: obj, hash: hash}
	if live == nil {
		p.why = "absent"
		return p, nil
	}
	if got := live.GetAnnotations()[wellknown.AnnotationAppliedHash]; got != hash {
		p.why = fmt.Sprintf("%s is %q, want %q", wellknown.AnnotationAppliedHash, got, hash)
		return p, nil
	}
	p.key, p.memoable = keyOf(hash, live, kschema.Known(obj), a.fieldManager()) // metadata.go
	if p.memoable && a.memo.has(p.key) {
		return p, nil
	}
	p.why, err = a.fieldsDiffer(obj, live)
	var skew *schemaSkew
	if errors.As(err, &skew) {
		p.why, p.skew, err = skew.Error()+": the apply decides", true, nil
		p.key, p.memoable = keyOf(hash, live, false, "") // the server's verdict holds for this state of live only
	}
	if err == nil && p.why == "" && p.memoable {
		a.memo.add(p.key)
	}
	return p, err
}

// schemaSkew is a schema that cannot type the desired object.
type schemaSkew struct{ err error }

func (e *schemaSkew) Error() string { return "schema cannot type the object (" + e.err.Error() + ")" }
func (e *schemaSkew) Unwrap() error { return e.err }

// fieldsDiffer compares the fields the field manager owns on live with the
// fields of obj (stamped). It returns "" when they agree.
func (a *Applier) fieldsDiffer(obj, live *unstructured.Unstructured) (string, error) {
	owned, why, err := ownedFields(live, a.fieldManager(), obj.GetAPIVersion())
	if why != "" || err != nil {
		return why, err
	}
	want, exact, err := a.fieldSet(obj)
	if err != nil {
		return "", &schemaSkew{err}
	}
	if exact {
		if want.Equals(owned) {
			return "", nil
		}
		return describe(want.Difference(owned), owned.Difference(want)), nil
	}
	if why := describe(unrelated(want, owned), unrelated(owned, want)); why != "" {
		return why, nil
	}
	if path, ok := subset(obj.Object, live.Object, ""); !ok {
		return "live value differs at " + path, nil
	}
	return "", nil
}

// stripped are the paths the API server never records in managedFields
// (k8s.io/apimachinery/pkg/util/managedfields/internal/stripmeta.go).
var stripped = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

var deduced = managedfields.NewDeducedTypeConverter()

// fieldSet is the field set the API server records for an apply of obj, as
// typed.TypedValue.ToFieldSet computes it (defaulted key fields of
// associative lists included) less the stripped paths. exact is false when
// the schema was deduced from obj, so that lists count as atomic.
func (a *Applier) fieldSet(obj *unstructured.Unstructured) (set *fieldpath.Set, exact bool, err error) {
	var tv *typed.TypedValue
	switch {
	case kschema.Known(obj):
		tv, err = kschema.Typed(obj)
		exact = true
	case a.TypeConverter != nil:
		tv, err = a.TypeConverter.ObjectToTyped(obj)
		exact = true
	default:
		tv, err = deduced.ObjectToTyped(obj)
	}
	if err != nil {
		return nil, false, err
	}
	if set, err = tv.ToFieldSet(); err != nil {
		return nil, false, err
	}
	return set.Difference(stripped), exact, nil
}

// ownedFields decodes the fields manager owns on live through server-side
// apply: the managedFields entry with that manager, operation Apply and no
// subresource. why is not "" when there is no such entry for apiVersion.
func ownedFields(live *unstructured.Unstructured, manager, apiVersion string) (set *fieldpath.Set, why string, err error) {
	entry := appliedEntry(live, manager)
	if entry == nil {
		return nil, "no fields applied by " + manager, nil
	}
	if v := entry["apiVersion"]; v != apiVersion {
		return nil, fmt.Sprintf("fields of %s recorded for apiVersion %v, want %s", manager, v, apiVersion), nil
	}
	raw, err := fieldsJSON(entry["fieldsV1"])
	if err != nil {
		return nil, "", err
	}
	set = &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, "", fmt.Errorf("managedFields of %s: %w", manager, err)
	}
	return set, "", nil
}

// appliedEntry is live's managedFields entry of manager's applies (the
// first with operation Apply and no subresource), nil when none.
func appliedEntry(live *unstructured.Unstructured, manager string) map[string]any {
	meta, _ := live.Object["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		if entry["manager"] == manager && entry["operation"] == "Apply" && isEmpty(entry["subresource"]) {
			return entry
		}
	}
	return nil
}

// fieldsJSON is the JSON of a managedFields entry's fieldsV1: the decoded
// tree as the API server sends it, or its JSON text as the operator's cache
// keeps it.
func fieldsJSON(v any) ([]byte, error) {
	if s, ok := v.(string); ok {
		return []byte(s), nil
	}
	return json.Marshal(v)
}

func isEmpty(v any) bool { return v == nil || v == "" }

// describe says which fields are missing from the owned set and which it
// has on top of the wanted ones; "" when both are empty.
func describe(missing, extra *fieldpath.Set) string {
	var why string
	if !missing.Empty() {
		why = "fields not owned: " + short(missing)
	}
	if !extra.Empty() {
		if why != "" {
			why += "; "
		}
		why += "fields owned but not wanted: " + short(extra)
	}
	return why
}

// short lists at most a few paths of s.
func short(s *fieldpath.Set) string {
	const most = 3
	var b bytes.Buffer
	n := 0
	for p := range s.Leaves().All() {
		if n == most {
			fmt.Fprintf(&b, " and %d more", s.Leaves().Size()-most)
			break
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
		n++
	}
	return b.String()
}

// neverSent are the metadata fields the server sets; the applier never
// sends them, and they do not count towards the hash.
var neverSent = map[string]bool{
	"uid": true, "resourceVersion": true, "generation": true, "creationTimestamp": true,
	"managedFields": true, "selfLink": true, "deletionTimestamp": true, "deletionGracePeriodSeconds": true,
}

var errNoMetadata = errors.New("metadata is not an object")

// stamp returns what the applier sends for desired: desired without status
// and the fields in neverSent, annotated with its hash. It copies only the
// maps it changes; the rest is shared with desired and must not be mutated.
func stamp(desired *unstructured.Unstructured) (*unstructured.Unstructured, string, error) {
	if desired == nil {
		return nil, "", errors.New("no desired object")
	}
	obj := make(map[string]any, len(desired.Object))
	for k, v := range desired.Object {
		if k != "status" {
			obj[k] = v
		}
	}
	m, ann, err := sendableMeta(desired.Object["metadata"])
	if err != nil {
		return nil, "", err
	}
	obj["metadata"] = m
	hash, err := hashOf(obj)
	if err != nil {
		return nil, "", err
	}
	if ann == nil {
		ann = map[string]any{}
	}
	ann[wellknown.AnnotationAppliedHash] = hash
	m["annotations"] = ann
	return &unstructured.Unstructured{Object: obj}, hash, nil
}

// sendableMeta copies metadata without the fields in neverSent and without
// wellknown.AnnotationAppliedHash; ann is the copy's annotations map, nil when empty.
func sendableMeta(v any) (m, ann map[string]any, err error) {
	meta, ok := v.(map[string]any)
	if !ok {
		return nil, nil, errNoMetadata
	}
	m = make(map[string]any, len(meta)+1)
	for k, v := range meta {
		if !neverSent[k] {
			m[k] = v
		}
	}
	if ann, err = annotations(m); err != nil {
		return nil, nil, err
	}
	if len(ann) == 0 {
		delete(m, "annotations")
		return m, nil, nil
	}
	m["annotations"] = ann
	return m, ann, nil
}

// annotations copies m's annotations without wellknown.AnnotationAppliedHash.
func annotations(m map[string]any) (map[string]any, error) {
	v, ok := m["annotations"]
	if !ok || v == nil {
		return nil, nil
	}
	in, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("metadata.annotations is %T, not an object", v)
	}
	out := make(map[string]any, len(in)+1)
	for k, v := range in {
		if k != wellknown.AnnotationAppliedHash {
			out[k] = v
		}
	}
	return out, nil
}

// hashOf is the first 16 hex digits of the sha256 of obj's canonical JSON
// (encoding/json writes map keys in sorted order).
func hashOf(obj map[string]any) (string, error) {
	b, err := jsonenc.Append(make([]byte, 0, 2048), obj) // json.Marshal's bytes
	if err != nil {
		return "", fmt.Errorf("hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// For kinds without a schema the desired field set is deduced: every list is
// atomic (one path) where the API server, knowing the schema, may record a
// list's items and their fields, and every map is granular where the server
// may record an atomic map as one path. The sets are compared by field path
// prefix instead: each path is cut before its first list key, value or index,
// and a path of one set counts as present in the other when a path of the
// other is a prefix of it, or it is a prefix of one. A field lost inside a
// list cannot be seen that way, so subset also compares the values.

// unrelated returns the paths of a (cut as above) that no path of b is
// prefix-related to.
func unrelated(a, b *fieldpath.Set) *fieldpath.Set {
	cutB := cut(b)
	out := &fieldpath.Set{}
	for p := range cut(a).All() {
		if !related(cutB, p) {
			out.Insert(p)
		}
	}
	return out
}

// cut cuts every path of s before its first element that is not a field name.
func cut(s *fieldpath.Set) *fieldpath.Set {
	out := &fieldpath.Set{}
	for p := range s.All() {
		for i, pe := range p {
			if pe.FieldName == nil {
				p = p[:i]
				break
			}
		}
		if len(p) > 0 {
			out.Insert(p)
		}
	}
	return out
}

// related reports whether s holds p, a prefix of p, or a path below p.
func related(s *fieldpath.Set, p fieldpath.Path) bool {
	for _, pe := range p {
		if s.Members.Has(pe) {
			return true
		}
		child, ok := s.Children.Get(pe)
		if !ok {
			return false
		}
		s = child
	}
	return true
}

// subset reports whether every value want sets is the same in have. Maps
// may have more keys. A list's items must match, in order, items of the live
// list, each as a subset; the live list may have more items (another
// writer's items of a map or set list; another writer's change to an atomic
// list takes the whole list from the field manager, which the field sets
// show). path is where they first differ.
func subset(want, have any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			if p, ok := subset(v, h[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return path, false
		}
		return subsequence(w, h, path)
	case nil:
		return path, have == nil
	}
	if x, ok := number(want); ok {
		y, ok := number(have)
		return path, ok && x == y
	}
	return path, reflect.DeepEqual(want, have)
}

// subsequence matches each item of want, in order, to the first item of
// have left that holds it as a subset; taking the first match never hides a
// match that exists.
func subsequence(want, have []any, path string) (string, bool) {
	j := 0
	for i, w := range want {
		for ; j < len(have); j++ {
			if _, ok := subset(w, have[j], ""); ok {
				break
			}
		}
		if j == len(have) {
			return fmt.Sprintf("%s[%d]", path, i), false
		}
		j++
	}
	return "", true
}

// number converts the numbers unstructured objects hold.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
