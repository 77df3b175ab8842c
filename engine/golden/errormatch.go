package golden

import (
	"regexp"
	"strings"
)

// AnyPosition is how error.txt writes a position matched by any line and
// column of its file: `templates/blog/blog.cue:*` for
// `templates/blog/blog.cue:31:18`. The field path and the message are still
// compared exactly, so a line added above #Spec does not break the case;
// exact positions stay the default.
const AnyPosition = ".cue:*"

// errorMatches says whether the expected error.txt want matches the error
// got: equal, or equal but for each AnyPosition of want, which matches any
// line:column of the same file.
func errorMatches(want, got string) bool {
	want, got = strings.TrimSpace(want), strings.TrimSpace(got)
	if want == got {
		return true
	}
	if !strings.Contains(want, AnyPosition) {
		return false
	}
	parts := strings.Split(want, AnyPosition)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile(`^` + strings.Join(parts, `\.cue:\d+:\d+`) + `$`)
	return err == nil && re.MatchString(got)
}
