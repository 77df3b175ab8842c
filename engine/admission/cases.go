package admission

import (
	"fmt"

	"golang.org/x/tools/txtar"

	"github.com/cueop/cueop/engine/golden"
	"github.com/cueop/cueop/engine/template"
)

// ParseCase reads a golden case of k (a txtar archive) named name: its
// parent and the objects it may reference, or only that it expects an
// error.
func ParseCase(k *template.Kind, name string, data []byte) (Case, error) {
	ar := txtar.Parse(data)
	c := Case{Name: name}
	for _, f := range ar.Files {
		if f.Name == golden.SectionError {
			c.WantsError = true
			return c, nil
		}
	}
	var err error
	if c.Parent, err = golden.ParseParent(golden.Section(ar, golden.SectionParent), k); err != nil {
		return c, err
	}
	if c.Referenced, err = golden.ParseObjects(golden.Section(ar, golden.SectionReferenced)); err != nil {
		return c, fmt.Errorf("%s: %w", golden.SectionReferenced, err)
	}
	return c, nil
}
