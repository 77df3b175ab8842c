package golden

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// Sections of a case archive.
const (
	SectionParent   = "parent.yaml"
	SectionObserved = "observed.yaml"
	SectionChildren = "children.yaml"
	SectionStatus   = "status.yaml"
	SectionError    = "error.txt"
)

// ErrNoExpected is the error of a case that has no expected section.
var ErrNoExpected = errors.New("no expected section")

// Result is the outcome of one case.
type Result struct {
	// Case is the archive's path.
	Case string
	// Err is why the case failed: a render error or a mismatch with a diff.
	Err error
	// Updated is true when update rewrote the archive.
	Updated bool
}

// Run runs every case under dir for the kinds of set. A kind's cases are in
// dir/<kind name>/*.txtar.
func Run(set *template.Set, dir string, update bool, opts render.Options) ([]Result, error) {
	var results []Result
	for _, k := range set.Kinds {
		paths, err := filepath.Glob(filepath.Join(dir, k.Name, "*.txtar"))
		if err != nil {
			return nil, err
		}
		sort.Strings(paths)
		for _, p := range paths {
			results = append(results, runFile(set, k, p, update, opts))
		}
	}
	return results, nil
}

func runFile(set *template.Set, k *template.Kind, path string, update bool, opts render.Options) Result {
	res := Result{Case: path}
	data, err := os.ReadFile(path)
	if err != nil {
		res.Err = err
		return res
	}
	ar := txtar.Parse(data)
	got, err := Evaluate(set, k, ar, opts)
	if err != nil {
		res.Err = fmt.Errorf("%s: %w", path, err)
		return res
	}
	if update {
		res.Updated, res.Err = rewrite(path, ar, got)
		return res
	}
	res.Err = compare(path, ar, got)
	return res
}

// compare checks every expected section of ar against got.
func compare(path string, ar *txtar.Archive, got map[string][]byte) error {
	var errs []error
	checked := 0
	for _, f := range ar.Files {
		if f.Name == SectionParent || f.Name == SectionObserved || f.Name == SectionReferenced {
			continue
		}
		checked++
		want := f.Data
		have, ok := got[f.Name]
		switch {
		case !ok && f.Name == SectionHeld && got[SectionChildren] != nil:
			errs = append(errs, fmt.Errorf("%s: %s expected, but no child is held back", path, f.Name))
		case !ok:
			errs = append(errs, fmt.Errorf("%s: %s expected, but %s", path, f.Name, describe(got)))
		case f.Name == SectionError && errorMatches(string(want), string(have)): // errormatch.go
		case !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(have)):
			errs = append(errs, fmt.Errorf("%s: %s differs (-want +got):\n%s", path, f.Name, Diff(string(want), string(have))))
		}
	}
	if _, held := got[SectionHeld]; held && hasSection(ar, SectionChildren) && !hasSection(ar, SectionHeld) {
		errs = append(errs, fmt.Errorf("%s: children are held back behind a wave: %s expected; run with update to write it", path, SectionHeld))
	}
	if checked == 0 {
		errs = append(errs, fmt.Errorf("%s: %w (%s, %s or %s); run with update to write them", path, ErrNoExpected, SectionChildren, SectionStatus, SectionError))
	}
	return errors.Join(errs...)
}

func describe(got map[string][]byte) string {
	if e, ok := got[SectionError]; ok {
		return "the render failed: " + strings.TrimSpace(string(e))
	}
	return "the render succeeded"
}

// rewrite replaces the expected sections with got. Sections the case did
// not have are added only when the case had none of the kind.
func rewrite(path string, ar *txtar.Archive, got map[string][]byte) (bool, error) {
	old := txtar.Format(ar)
	var files []txtar.File
	for _, f := range ar.Files {
		if f.Name == SectionParent || f.Name == SectionObserved || f.Name == SectionReferenced {
			files = append(files, f)
		}
	}
	wanted := expectedSections(ar, got)
	for _, name := range []string{SectionChildren, SectionHeld, SectionStatus, SectionConverted, SectionError} {
		data, ok := got[name]
		if old, had := section(ar, name); had && name == SectionError && ok && errorMatches(string(old), string(data)) {
			data = old // keeps the positions the case matches any line of
		}
		if ok && wanted[name] {
			files = append(files, txtar.File{Name: name, Data: data})
		}
	}
	ar.Files = files
	out := txtar.Format(ar)
	if bytes.Equal(old, out) {
		return false, nil
	}
	return true, os.WriteFile(path, out, 0o644)
}

func hasSection(ar *txtar.Archive, name string) bool {
	_, ok := section(ar, name)
	return ok
}

// section is the data of ar's section name.
func section(ar *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// expectedSections keeps the sections a case asked for; a case that flips
// between success and failure gets all sections of its new outcome.
func expectedSections(ar *txtar.Archive, got map[string][]byte) map[string]bool {
	had := map[string]bool{}
	for _, f := range ar.Files {
		if _, ok := got[f.Name]; ok {
			had[f.Name] = true
		}
	}
	if len(had) > 0 {
		had[SectionHeld] = had[SectionChildren] // held back: not in children.yaml
		return had
	}
	return map[string]bool{SectionChildren: true, SectionHeld: true, SectionStatus: true, SectionError: true}
}
