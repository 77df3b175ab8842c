package source

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Refusal is a module version whose content was refused at fetch (an
// archive over the limits, an entry out of the module, a module file
// naming another module): the same digest is refused again without a
// download, and reported once (Options.Refused).
type Refusal struct {
	// Ref is the reference whose fetch met it.
	Ref string
	// Module (with its major version suffix), Version and Digest name
	// the module version refused: the reference's module or one of its
	// dependencies.
	Module  string
	Version string
	Digest  string
	// Err says why, naming the entry refused.
	Err error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// errKnownRefusal marks the refusal of a digest already refused and
// reported: Run does not log it again.
var errKnownRefusal = errors.New("refused before")

// refusedBefore is the error of a fetch meeting a digest refused before.
func (s *Source) refusedBefore(digest string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refused[digest]
	if !ok {
		return nil
	}
	return fmt.Errorf("%w (%w: not fetched again until the reference moves)", r, errKnownRefusal)
}

// refuse records that the content of rf.Digest was refused, and reports
// it once.
func (s *Source) refuse(rf *Refusal) {
	s.mu.Lock()
	_, seen := s.refused[rf.Digest]
	if !seen {
		for d := range s.refused {
			if len(s.refused) < maxRefused {
				break
			}
			delete(s.refused, d)
		}
		s.refused[rf.Digest] = rf
	}
	s.mu.Unlock()
	if !seen && s.opts.Refused != nil {
		s.opts.Refused(*rf)
	}
}

// onlyKnownRefusals tells that every error joined in err is a refusal
// reported before.
func onlyKnownRefusals(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyKnownRefusals(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, errKnownRefusal)
}

// cacheFailed tells an extraction that failed on the module cache (a
// directory not made, a disk full) rather than on the module's content:
// that is no refusal of the content.
func cacheFailed(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	return errors.As(err, &pe) || errors.As(err, &le)
}
