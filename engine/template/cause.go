package template

import (
	"errors"
	"fmt"
	"strings"

	cueerrors "cuelang.org/go/cue/errors"
)

// withCause appends to msg, the message of e, the reasons e wraps, down
// its chain: CUE reports a failed @embed as "@embed" wrapping why (a
// missing file, a file outside the package, a file that does not decode).
// The positions of wrapped CUE errors are among e's already.
func withCause(e cueerrors.Error, msg string) string {
	for cause := errors.Unwrap(e); cause != nil; cause = errors.Unwrap(cause) {
		var text string
		if ce, ok := cause.(cueerrors.Error); ok {
			format, args := ce.Msg()
			text = fmt.Sprintf(format, args...)
		} else {
			text = cause.Error()
		}
		if text != "" && !strings.Contains(msg, text) {
			msg += ": " + text
		}
	}
	return msg
}
