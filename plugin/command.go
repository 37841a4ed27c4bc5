package plugin

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
)

// Command is the shape of every command's options, run in this order:
//
//   - Complete(args) takes the positional arguments and derives what needs no
//     I/O (defaults, parsed values).
//   - Validate() checks every flag and argument, alone and together, before any
//     I/O: a refusal here is a usage error (exit 2) that says what to give
//     instead, and nothing was read, written or contacted.
//   - Run(ctx) does the I/O: reads the files the flags name, builds clients,
//     does the work, prints the result on stdout and progress on stderr.
type Command interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// cmdEnv is embedded by every command's options: the environment and the cobra
// command it runs as (for flags' Changed and for usage errors).
type cmdEnv struct {
	env *Env
	cmd *cobra.Command
}

func (c *cmdEnv) bind(env *Env, cmd *cobra.Command) { c.env, c.cmd = env, cmd }

// usage marks err as a usage error of this command (exit 2, see --help).
func (c *cmdEnv) usage(err error) error { return clierr.Usage(c.cmd, err) }

// boundCommand is a Command that embeds cmdEnv.
type boundCommand interface {
	Command
	bind(env *Env, cmd *cobra.Command)
}

// wire makes o the implementation of cmd: RunE runs Complete, Validate and Run.
// An error from Validate that carries no exit code of its own is a usage error.
func wire(env *Env, cmd *cobra.Command, o boundCommand) *cobra.Command {
	o.bind(env, cmd)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			var ce *clierr.Error
			if errors.As(err, &ce) {
				return err
			}
			return clierr.Usage(c, err)
		}
		return o.Run(c.Context())
	}
	return cmd
}

// noArgs is Complete for commands without positional arguments (cobra's Args
// has checked their number).
type noArgs struct{}

func (noArgs) Complete([]string) error { return nil }
