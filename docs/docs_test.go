// Package docs_test keeps the documentation from rotting: it fails when the
// code gives a condition or Event reason that docs/troubleshooting.md does
// not name, or when a relative link of README.md or docs/*.md points to a
// file or a heading that does not exist. (That every flag of the commands
// an operator runs is in docs/operating.md is checked where the command
// tree is built: cmd/cueop/docs_test.go.)
//
// The shell blocks of docs/tutorial.md run in order, from the repository
// root, in one shell (tutorial_test.go): a block opened with ```sh runs; a
// block opened with ```sh no-test (a command shown, a command that blocks)
// does not; a ```text block right after a ```sh block is lines that block
// prints (`...` standing for any text), and the test checks them; blocks of
// another language (```cue, ```yaml, ```) are never run. A block that
// expects a command to fail says so in the shell (`! cmd`), and the test
// fails when it succeeds.
//
// The tour of README.md runs the same way (readme_test.go), in a copy of
// the repository: its ```sh background block (make run) in the background,
// the others once it printed the lines shown after it; times, ages and
// revision hashes in the lines shown match any.
package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, from this package's directory.
const root = ".."

// reasonWord is the shape of a condition or Event reason: one CamelCase
// word (the sentences crdgen gives as a rule's reason are not reasons).
var reasonWord = regexp.MustCompile(`^[A-Z][a-z]+([A-Z][a-z]*)*$`)

// eventCalls are the functions whose string arguments are Event reasons.
var eventCalls = map[string]bool{"Event": true, "Eventf": true, "AnnotatedEventf": true, "crdEvent": true, "crdEventType": true}

// codeReasons are the reasons the Go code of engine/ and cmd/ gives
// conditions and Events, found by parsing it: the values of constants
// whose name holds Reason (engine/wellknown: Reason*, TemplateReason*,
// CRDReason*), the string literals given a Reason field or a variable
// named reason, those passed to an Event recorder, and the apply actions
// a reconcile reports as Events (capitalised, as engine/reconcile's
// eventReason does; `unchanged` is never reported). Each maps to where
// it was found.
func codeReasons(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	add := func(fset *token.FileSet, n ast.Node, lit ast.Expr) {
		bl, ok := lit.(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(bl.Value)
		if err != nil || !reasonWord.MatchString(s) {
			return
		}
		if _, seen := found[s]; !seen {
			found[s] = fset.Position(n.Pos()).String()
		}
	}
	for _, dir := range []string{"engine", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if i >= len(n.Values) {
							break
						}
						if strings.Contains(name.Name, "Reason") {
							add(fset, n, n.Values[i])
						}
						if isActionType(n.Type) && (f.Name.Name == "apply" || f.Name.Name == "reconcile") {
							if bl, ok := n.Values[i].(*ast.BasicLit); ok && bl.Kind == token.STRING {
								s, _ := strconv.Unquote(bl.Value)
								if s != "unchanged" && s != "" {
									r := []rune(s)
									r[0] = unicode.ToUpper(r[0])
									add(fset, n, &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(string(r))})
								}
							}
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Reason" {
						add(fset, n, n.Value)
					}
				case *ast.AssignStmt:
					for i, lhs := range n.Lhs {
						if id, ok := lhs.(*ast.Ident); ok && id.Name == "reason" && i < len(n.Rhs) {
							add(fset, n, n.Rhs[i])
						}
					}
				case *ast.CallExpr:
					name := ""
					switch fn := n.Fun.(type) {
					case *ast.Ident:
						name = fn.Name
					case *ast.SelectorExpr:
						name = fn.Sel.Name
					}
					if eventCalls[name] {
						for _, a := range n.Args {
							add(fset, n, a)
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return found
}

// isActionType is true of a type named Action: apply.Action, within
// engine/apply and engine/reconcile (engine/diff's are the words of its
// report, not Event reasons).
func isActionType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "Action"
	case *ast.SelectorExpr:
		return e.Sel.Name == "Action"
	}
	return false
}

func TestTroubleshootingNamesEveryReason(t *testing.T) {
	reasons := codeReasons(t)
	// The parse must find the reasons it is known to hold: a refactor that
	// hides them from it (a reason built at run time) fails here, not by
	// finding none.
	for _, known := range []string{"ChildConflict", "Serving", "StorageMigrationFailed", "Released", "StatusWritten"} {
		if _, ok := reasons[known]; !ok {
			t.Errorf("the parse of the code found no reason %s: codeReasons needs updating", known)
		}
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for r := range reasons {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		if !strings.Contains(string(page), "`"+r+"`") {
			t.Errorf("reason %s (%s) is not in docs/troubleshooting.md: say what it means and what to do", r, reasons[r])
		}
	}
	t.Logf("%d reasons, each in docs/troubleshooting.md", len(names))
}

// markdownLink is an inline link or image: [text](target "title").
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// docFiles are README.md and docs/*.md, relative to root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		files = append(files, rel)
	}
	return files
}

// prose is a Markdown file without its fenced code blocks and code spans,
// line for line (the lines of a block are emptied).
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	in := false
	span := regexp.MustCompile("`[^`]*`")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
			continue
		}
		lines[i] = span.ReplaceAllString(l, "")
	}
	return lines
}

// anchors are the heading anchors of a Markdown file, as the usual
// renderers make them: the heading lowercased, its punctuation dropped,
// spaces made hyphens, a repeated one suffixed -1, -2, ...
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	in := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			continue
		}
		if in || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := count[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		count[a]++
	}
	return out
}

func TestRelativeLinksResolve(t *testing.T) {
	checked := 0
	for _, file := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range prose(string(text)) {
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := filepath.Join(root, file)
				if path != "" {
					dest = filepath.Join(root, filepath.Dir(file), path)
				}
				body, err := os.ReadFile(dest)
				if err != nil {
					if st, serr := os.Stat(dest); serr == nil && st.IsDir() && anchor == "" {
						continue // a directory
					}
					t.Errorf("%s:%d: link %s: %v", file, i+1, target, err)
					continue
				}
				if anchor != "" && !anchors(string(body))[anchor] {
					t.Errorf("%s:%d: link %s: no heading #%s in %s", file, i+1, target, anchor, filepath.Clean(strings.TrimPrefix(dest, root+"/")))
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link pattern needs updating")
	}
	t.Logf("%d relative links resolve", checked)
}

func TestAnchors(t *testing.T) {
	got := anchors("# The controller\n## Flags of `cueop run`\n## Sharding: when and how\n## Sharding: when and how\n```\n# not a heading\n```\n## The conversion webhook's certificates\n")
	for _, want := range []string{"the-controller", "flags-of-cueop-run", "sharding-when-and-how", "sharding-when-and-how-1", "the-conversion-webhooks-certificates"} {
		if !got[want] {
			t.Errorf("anchor %s missing from %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block made an anchor: %v", got)
	}
}
