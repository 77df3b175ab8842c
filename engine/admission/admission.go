package admission

import (
	"context"
	"errors"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// The checks a Finding names.
const (
	// CheckReferences: a reference the template writes as a literal names
	// a kind outside the readable kinds.
	CheckReferences = "references"
	// CheckRender: a CR that should render does not (the template fails,
	// a child is refused, the render runs out of budget).
	CheckRender = "render"
	// CheckChildren: a child is not valid by the Kubernetes schema of its
	// kind (a misspelt field, a wrong type).
	CheckChildren = "children"
	// CheckWaves: the waves of a render leave a gap.
	CheckWaves = "waves"
	// CheckReads: a status, condition or ready reads a field the child's
	// kind does not have (a warning).
	CheckReads = "reads"
	// CheckGates: a wave gate can never open (a warning).
	CheckGates = "gates"
	// CheckSchema: the kind's CRD cannot be generated, so no CR can be
	// built from it.
	CheckSchema = "schema"
)

// Input is one revision of one kind and what to render it with.
type Input struct {
	Kind *template.Kind
	// Options are the administrator's policy: allowed and readable kinds,
	// the render budget.
	Options render.Options
	// Eval runs the renders: the operator's worker pool, or
	// render.InProcess{} for trusted input; nil means render.InProcess{}.
	Eval render.Evaluator
	// CRD is the kind's CRD, which the CRs built from the schema are
	// built from; nil means crdgen.Generate(Kind).
	CRD *apiextensionsv1.CustomResourceDefinition
	// Cases are the kind's golden cases (optional).
	Cases []Case
	// Samples are sample CRs of the kind (optional), rendered with
	// Referenced as the objects they may reference.
	Samples    []*unstructured.Unstructured
	Referenced []*unstructured.Unstructured
}

// Case is a golden case of the kind, parsed (ParseCase).
type Case struct {
	// Name is how findings name the case: its path, in vet.
	Name       string
	Parent     *unstructured.Unstructured
	Referenced []*unstructured.Unstructured
	// WantsError: the case expects the render to fail (error.txt); it is
	// not rendered here.
	WantsError bool
}

// Finding is one thing admission refuses or warns of.
type Finding struct {
	// Check is the check that found it (CheckReferences, ...).
	Check string
	// Source is what was rendered: a golden case's Name, "sample Kind/name"
	// or the CR built from the schema; "" for the kind itself.
	Source string
	// Pos is the CUE file:line:col of the cause where known, else "".
	Pos string
	// Message is what vet says, the position included.
	Message string
}

// String is "[check] source: pos: message", or "[check] pos: message" for
// the kind itself; without pos when it is unknown or the message names it.
func (f Finding) String() string {
	msg := f.Message
	if f.Pos != "" && !strings.Contains(msg, f.Pos) {
		msg = f.Pos + ": " + msg
	}
	if f.Source == "" {
		return "[" + f.Check + "] " + msg
	}
	return "[" + f.Check + "] " + f.Source + ": " + msg
}

// Verdict is what admission says of a revision: it may serve when nothing
// is Refused.
type Verdict struct {
	Refused  []Finding
	Warnings []Finding
}

// Err is nil when nothing is refused; else one line (or several, for a
// render's several messages) per refusal, each naming its check, its
// source, the message vet gives and its position.
func (v Verdict) Err() error {
	errs := make([]error, len(v.Refused))
	for i, f := range v.Refused {
		errs[i] = errors.New(f.String())
	}
	return errors.Join(errs...)
}

// RefusedSource reports whether a refusal names source.
func (v Verdict) RefusedSource(source string) bool {
	for _, f := range v.Refused {
		if f.Source == source {
			return true
		}
	}
	return false
}

// Admit runs every check on in.Kind, in order. It stops after refused
// references, which every render would fail on too, and renders no more
// after one ran out of its budget (the next would likely too, and leave
// one more evaluation running on abandoned) or once ctx is done, which
// refuses: what was not rendered is not admitted.
func Admit(ctx context.Context, in Input) Verdict {
	a := newAdmitter(in)
	a.v.Refused = append(a.v.Refused, References(in.Kind, in.Options.ReadableKinds)...)
	if len(a.v.Refused) > 0 {
		return a.v
	}
	for _, c := range in.Cases {
		if !c.WantsError {
			a.render(ctx, c.Name, c.Parent, c.Referenced, false)
		}
	}
	for _, s := range in.Samples {
		a.render(ctx, "sample "+s.GetKind()+"/"+s.GetName(), s, in.Referenced, false)
	}
	built, err := schemaCRs(in.Kind, in.CRD)
	if err != nil {
		a.refuse(Finding{Check: CheckSchema, Message: err.Error(), Pos: firstPos(err.Error())})
	}
	for _, b := range built {
		a.render(ctx, b.source, b.parent, nil, true)
	}
	if err := ctx.Err(); err != nil {
		a.refuse(Finding{Check: CheckRender, Message: "admission stopped before every render ran: " + err.Error()})
	}
	return a.v
}

// cuePos matches a CUE position in a message: dir/file.cue:12:3.
var cuePos = regexp.MustCompile(`[^\s:"'()]+\.cue:\d+:\d+`)

// firstPos is the first CUE position msg names, or "".
func firstPos(msg string) string { return cuePos.FindString(msg) }
