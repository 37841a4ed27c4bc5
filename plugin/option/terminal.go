package option

import (
	"io"
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Terminal decides whether progress is drawn: only when stderr is a terminal,
// never with --no-progress, and never when the result is json/yaml.
type Terminal struct {
	NoProgress bool
}

// AddFlags adds --no-progress.
func (t *Terminal) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&t.NoProgress, "no-progress", false, "Do not draw progress bars on stderr (they are only drawn on a terminal)")
}

// ShowProgress reports whether to draw progress on errOut.
func (t *Terminal) ShowProgress(errOut io.Writer, out *Output) bool {
	if t.NoProgress || (out != nil && out.Machine()) {
		return false
	}
	f, ok := errOut.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
