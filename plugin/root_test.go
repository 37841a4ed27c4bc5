package plugin

import (
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestCommandTree builds every command (a duplicate flag panics here, not in a
// user's hands) and holds help text to kubectl's conventions: Short starts with a
// capital and has no final period, example lines are commands or # comments,
// flag names are lowercase kebab-case.
func TestCommandTree(t *testing.T) {
	root := NewCmdRoot(genericiooptions.NewTestIOStreamsDiscard())
	flagName := regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		if c.Short == "" {
			t.Errorf("%s: no Short", path)
		} else if r := []rune(c.Short); !unicode.IsUpper(r[0]) || strings.HasSuffix(c.Short, ".") {
			t.Errorf("%s: Short %q must start upper-case and not end with a period", path, c.Short)
		}
		for _, line := range strings.Split(c.Example, "\n") {
			l := strings.TrimSpace(line)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if strings.HasPrefix(l, "$") || strings.HasPrefix(l, "//") {
				t.Errorf("%s: example line %q: no prompts, comments start with #", path, l)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !flagName.MatchString(f.Name) {
				t.Errorf("%s: flag --%s is not lowercase kebab-case", path, f.Name)
			}
		})
		for _, sub := range c.Commands() {
			if sub.Name() == "help" {
				continue
			}
			walk(sub)
		}
	}
	walk(root)
}
