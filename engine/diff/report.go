package diff

import "k8s.io/apimachinery/pkg/runtime/schema"

// Action is what a reconcile would do to one child.
type Action string

// The actions of a reconcile, as Run classifies them.
const (
	Create    Action = "create"
	Update    Action = "update"
	Unchanged Action = "unchanged"
	Recreate  Action = "recreate"
	Refused   Action = "refused"
	Prune     Action = "prune"
	Release   Action = "release"
	// Conflict is a child whose name is taken by an object the CR does not
	// control and may not adopt: the CR would stall (ChildConflict).
	Conflict Action = "conflict"
	// Adopt is a child whose name is taken by an object with no controller
	// that its policy lets the CR take over.
	Adopt Action = "adopt"
)

// Report is what a template change would do to a cluster.
type Report struct {
	// Kinds are the summaries, one per kind diffed, in the templates' order.
	Kinds []KindSummary `json:"kinds"`
	// CRs are the CRs that would change or failed, sorted by kind,
	// namespace and name; unchanged ones are only counted in Kinds.
	CRs []CR `json:"crs"`
	// Files say, for each CR of Options.Files, which kubectl apply the
	// preview is of.
	Files []FileApply `json:"files,omitempty"`
	// Errors are failures not of one CR: a template that does not compile,
	// a list the API server refused.
	Errors []string `json:"errors,omitempty"`
}

// KindSummary counts what would happen to the CRs of one kind.
type KindSummary struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// NotServed is set when the cluster has no CRD for the kind.
	NotServed bool `json:"notServed,omitempty"`
	CRs       int  `json:"crs"`
	Unchanged int  `json:"unchanged"`
	Changing  int  `json:"changing"`
	Failed    int  `json:"failed"`
	// Children counts the children by action, unchanged ones excluded.
	Children map[Action]int `json:"children"`
	// Destructive counts recreates, refusals and prunes of children that
	// hold data.
	Destructive int `json:"destructive"`
	// Waiting counts the changing children that wait for a lower wave.
	Waiting int `json:"waiting"`
}

// CR is what would happen to one CR's children.
type CR struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Error is why the CR could not be diffed or would stall: a spec that
	// breaks the schema, a template that fails, a child the API server
	// refuses; each line names its source.
	Error string `json:"error,omitempty"`
	// Reason is the reason of Error the controller's condition would give
	// (ReferenceNotFound, ReferenceRefused, InvalidSpec, TemplateError, ...),
	// when it gives one.
	Reason string `json:"reason,omitempty"`
	// Diff is, for a CR of a file, a unified diff of the CR itself (its
	// spec, labels and annotations) from live to applied.
	Diff string `json:"diff,omitempty"`
	// Children are the children that would change, in render order, then
	// those pruned.
	Children []Child `json:"children,omitempty"`
	// Unchanged counts the children left as they are.
	Unchanged int `json:"unchanged"`
}

// Child is what would happen to one child.
type Child struct {
	ID          string `json:"id"`
	APIVersion  string `json:"apiVersion"`
	Kind        string `json:"kind"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Action      Action `json:"action"`
	Destructive bool   `json:"destructive,omitempty"`
	// Wave is the child's wave, for a kind with waves (nil otherwise).
	Wave *int `json:"wave,omitempty"`
	// Reason explains a recreate, a refusal, a release or a held action.
	Reason string `json:"reason,omitempty"`
	// Waiting, for a child of a wave above one not ready yet, says which
	// wave and child it waits for: the controller does not apply it in its
	// next reconcile, but once that wave is ready. The action and the diff
	// are still the eventual change, as rendered over the cluster now.
	Waiting string `json:"waiting,omitempty"`
	// Diff is a unified diff from the live object to the object after the
	// apply, of the fields cueop owns.
	Diff string `json:"diff,omitempty"`
}

// Changing reports whether any child of the CR would change.
func (c CR) Changing() bool { return len(c.Children) > 0 || c.Diff != "" }

// Failed reports whether the CR could not be diffed or has a refused child.
func (c CR) Failed() bool {
	if c.Error != "" {
		return true
	}
	for _, ch := range c.Children {
		if ch.Action == Refused || ch.Action == Conflict {
			return true
		}
	}
	return false
}

// ExitCode is 0 when nothing would change, 1 when something would, and 2
// when anything failed (an error wins over changes), as kubectl diff.
func (r *Report) ExitCode() int {
	code := 0
	if len(r.Errors) > 0 {
		return 2
	}
	for _, c := range r.CRs {
		if c.Failed() {
			return 2
		}
		if c.Changing() {
			code = 1
		}
	}
	return code
}

// summarize fills r.Kinds's counts from r.CRs and the unchanged CRs'
// count per kind.
func (r *Report) summarize(total map[schema.GroupKind]int) {
	for i := range r.Kinds {
		s := &r.Kinds[i]
		s.Children = map[Action]int{}
		s.CRs = total[schema.GroupKind{Group: s.Group, Kind: s.Kind}]
		for _, c := range r.CRs {
			if c.Kind != s.Kind || c.Group != s.Group {
				continue
			}
			switch {
			case c.Failed():
				s.Failed++
			case c.Changing():
				s.Changing++
			}
			for _, ch := range c.Children {
				s.Children[ch.Action]++
				if ch.Destructive {
					s.Destructive++
				}
				if ch.Waiting != "" {
					s.Waiting++
				}
			}
		}
		s.Unchanged = s.CRs - s.Failed - s.Changing
	}
}
