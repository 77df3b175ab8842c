package render

import (
	"fmt"
	"strconv"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// applyWaves reads the template's waves and readyWhen, checks that each
// names a rendered child, and gives each child its wave and readiness. A
// kind without waves is left as it is.
func applyWaves(k *template.Kind, v cue.Value, children []Child, observed map[string]*unstructured.Unstructured) error {
	if !k.Waves && !k.ReadyWhen {
		return nil
	}
	byID := make(map[string]*Child, len(children))
	for i := range children {
		byID[children[i].ID] = &children[i]
	}
	bad := &Error{Reason: wellknown.ReasonTemplateError}
	if wv := v.LookupPath(template.PathWaves); wv.Exists() {
		bad.Messages = append(bad.Messages, setWaves(wv, byID)...)
	}
	if rv := v.LookupPath(template.PathReadyWhen); rv.Exists() {
		bad.Messages = append(bad.Messages, setReadyWhen(rv, byID, observed)...)
		bad.Messages = append(bad.Messages, waveCycles(rv, byID)...)
	}
	if len(bad.Messages) > 0 {
		return bad
	}
	for i := range children {
		annotateWave(&children[i])
	}
	return nil
}

func setWaves(wv cue.Value, byID map[string]*Child) []string {
	if err := wv.Validate(cue.Concrete(true)); err != nil {
		return evalError(err).Messages
	}
	return eachRendered(wv, byID, template.FieldWaves, "write the wave under the same condition as its child", func(id string, v cue.Value, c *Child) []string {
		n, err := v.Int64()
		if err != nil {
			return []string{entryError(template.FieldWaves, id, v, "%v", err)}
		}
		c.Wave = int(n)
		return nil
	})
}

// setReadyWhen evaluates each readiness expression. A child not observed
// yet is not ready, and so is one whose expression is incomplete (a status
// field not written yet).
func setReadyWhen(rv cue.Value, byID map[string]*Child, observed map[string]*unstructured.Unstructured) []string {
	return eachRendered(rv, byID, template.FieldReadyWhen, "write it under the same condition as its child", func(id string, v cue.Value, c *Child) []string {
		ready := false
		c.ReadyWhen = &ready
		if observed[id] == nil {
			return nil
		}
		b, err := v.Bool()
		if err != nil && v.Validate(cue.Concrete(true)) != nil && v.Validate() == nil {
			return nil // incomplete: not ready yet
		}
		if err != nil {
			return evalError(err).Messages
		}
		ready = b
		return nil
	})
}

// eachRendered calls set, in the order of their ids, with each entry of
// the template's field (v, a struct by child id) and the rendered child it
// names, and returns the messages set returns; an entry that names no
// rendered child is an error, that says how to fix it.
func eachRendered(v cue.Value, byID map[string]*Child, field, fix string, set func(id string, v cue.Value, c *Child) []string) []string {
	ids, vals, err := sortedIDs(v)
	if err != nil {
		return []string{err.Error()}
	}
	var msgs []string
	for _, id := range ids {
		c := byID[id]
		if c == nil {
			msgs = append(msgs, entryError(field, id, vals[id], "no child %q is rendered: %s", id, fix))
			continue
		}
		msgs = append(msgs, set(id, vals[id], c)...)
	}
	return msgs
}

// annotateWave records a child's wave on it when it is not 0, and removes
// an annotation of that name the template wrote.
func annotateWave(c *Child) {
	ann := c.Object.GetAnnotations()
	if _, has := ann[wellknown.AnnotationWave]; !has && c.Wave == 0 {
		return
	}
	if ann == nil {
		ann = map[string]string{}
	}
	delete(ann, wellknown.AnnotationWave)
	if c.Wave != 0 {
		ann[wellknown.AnnotationWave] = strconv.Itoa(c.Wave)
	}
	if len(ann) == 0 {
		unstructured.RemoveNestedField(c.Object.Object, "metadata", "annotations")
		return
	}
	c.Object.SetAnnotations(ann)
}

// WaveOf is the wave recorded on a live child (0 when none).
func WaveOf(o *unstructured.Unstructured) int {
	n, err := strconv.Atoi(o.GetAnnotations()[wellknown.AnnotationWave])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// WaveGaps says, for vet, which waves between 0 and the highest one
// rendered have no child: a wave number the author likely mistyped.
func WaveGaps(children []Child) error {
	used := map[int]bool{}
	highest := 0
	for _, c := range children {
		used[c.Wave] = true
		highest = max(highest, c.Wave)
	}
	for w := 0; w < highest; w++ {
		if !used[w] {
			return fmt.Errorf("waves: no child is in wave %d, below wave %d: number the waves from 0 without gaps", w, highest)
		}
	}
	return nil
}

// entryError is the message of an error of the entry id of the template's
// field (waves, readyWhen, policies, references): at the position where
// the template writes its value v, when it has one.
func entryError(field, id string, v cue.Value, format string, args ...any) string {
	msg := fmt.Sprintf("%s.%s: %s", field, id, fmt.Sprintf(format, args...))
	if p := authorPos(v); p.IsValid() {
		return template.ShortPos(p) + ": " + msg
	}
	return msg
}
