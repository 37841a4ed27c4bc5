package option

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Output is the -o/--output flag: the format of the result on stdout. Empty
// means the human form the command prints by default.
type Output struct {
	Format string
}

// AddFlags adds -o/--output.
func (o *Output) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Format, "output", "o", "", "Output format of the result: json or yaml (default: human-readable text)")
}

// Validate rejects formats other than json and yaml.
func (o *Output) Validate() error {
	switch o.Format {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q: allowed formats are json, yaml", o.Format)
}

// Machine reports whether the result goes out as json or yaml, in which case
// progress output is suppressed so stdout stays pipeable.
func (o *Output) Machine() bool { return o.Format != "" }

// Print writes v as json or yaml. It must not be called for the human form.
func (o *Output) Print(w io.Writer, v any) error {
	switch o.Format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	// A bug if reached: Validate rejects everything else. Never panic.
	return fmt.Errorf("output format %q was not validated", o.Format)
}
