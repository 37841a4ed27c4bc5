package progress

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestBars_DrawsLabelsAndFailures(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, Options{Width: 80, ForceTTY: true})
	b.Start("push files", "push files", 0)
	b.Start("pull db", "pull database", 2048)
	b.Add("push files", 1024)
	b.Add("pull db", 1024)
	b.Add("unknown", 5) // ignored
	b.Done("push files", nil)
	b.Done("pull db", errors.New("boom"))
	b.Wait()
	out := buf.String()
	for _, want := range []string{"push files", "pull database", "1.0 KiB", "failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
