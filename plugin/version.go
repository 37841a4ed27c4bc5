package plugin

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
)

// Set at build time with -ldflags "-X .../plugin.version=v1.2.3 ...".
var (
	version   = ""
	commit    = ""
	buildDate = ""
)

// VersionInfo is the result of `version`; its json/yaml form is stable.
type VersionInfo struct {
	APIVersion          string `json:"apiVersion"`
	Kind                string `json:"kind"`
	Version             string `json:"version"`
	Commit              string `json:"commit"`
	BuildDate           string `json:"buildDate"`
	GoVersion           string `json:"goVersion"`
	Platform            string `json:"platform"`
	BundleFormatVersion string `json:"bundleFormatVersion"`
}

// ResultAPIVersion is the apiVersion of every json/yaml result this plugin prints.
const ResultAPIVersion = "assisted.kubectl.io/v1alpha1"

// CurrentVersion reports the build's version, falling back to what the Go
// toolchain recorded when no ldflags were given (go install, go run).
func CurrentVersion() VersionInfo {
	v := VersionInfo{
		APIVersion:          ResultAPIVersion,
		Kind:                "Version",
		Version:             version,
		Commit:              commit,
		BuildDate:           buildDate,
		GoVersion:           runtime.Version(),
		Platform:            runtime.GOOS + "/" + runtime.GOARCH,
		BundleFormatVersion: bundle.FormatVersion,
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && v.Commit == "":
				v.Commit = s.Value
			case s.Key == "vcs.time" && v.BuildDate == "":
				v.BuildDate = s.Value
			}
		}
	}
	if v.Version == "" {
		v.Version = "v0.0.0-dev"
	}
	return v
}

// VersionOptions holds the resolved inputs of `version`.
type VersionOptions struct {
	cmdEnv
	noArgs
	Output option.Output
}

// NewCmdVersion builds `version`.
func NewCmdVersion(env *Env) *cobra.Command {
	o := &VersionOptions{}
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the plugin's version and the bundle format it writes",
		Example: env.Example(`
  # Print the version
  %[1]s assisted version

  # Print it as JSON for scripts
  %[1]s assisted version -o json`),
		Args: cobra.NoArgs,
	}
	o.Output.AddFlags(cmd.Flags())
	return wire(env, cmd, o)
}

// Validate checks -o.
func (o *VersionOptions) Validate() error { return o.Output.Validate() }

// Run prints the version.
func (o *VersionOptions) Run(context.Context) error {
	env := o.env
	v := CurrentVersion()
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, v)
	}
	_, err := fmt.Fprintf(env.Streams.Out,
		"Version:        %s\nCommit:         %s\nBuild date:     %s\nGo:             %s (%s)\nBundle format:  %s\n",
		v.Version, orUnknown(v.Commit), orUnknown(v.BuildDate), v.GoVersion, v.Platform, v.BundleFormatVersion)
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
