package reconcile

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLongMessagesAreClipped: a condition message longer than the API
// server takes (a render error quoting a tenant's 40,000-character value)
// is cut to the limit, so that the status write (Ready with it) is not
// refused whole.
func TestLongMessagesAreClipped(t *testing.T) {
	long := strings.Repeat("é", 40000)
	out := conditionsValue([]metav1.Condition{{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "InvalidSpec", Message: long},
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "InvalidSpec", Message: "short"}})
	for _, c := range out {
		m := c.(map[string]any)
		msg, _ := m["message"].(string)
		if n := utf8.RuneCountInString(msg); n > maxMessage {
			t.Errorf("%s message has %d characters, want at most %d", m["type"], n, maxMessage)
		}
		if m["type"] == "Stalled" && !strings.HasSuffix(msg, "(cut)") {
			t.Errorf("Stalled message does not say it was cut: ...%s", msg[len(msg)-20:])
		}
		if m["type"] == "Ready" && msg != "short" {
			t.Errorf("Ready message = %q, want it unchanged", msg)
		}
	}
}
