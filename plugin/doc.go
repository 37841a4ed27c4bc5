// Package plugin holds the cobra commands of kubectl-assisted. It only turns flags
// into the plain structs of the bundle, restore and day2 packages, runs them, and
// renders their results (stdout) and progress (stderr). The work itself lives in
// those cobra-free packages.
//
// Every command's options implement Command (command.go): Complete(args), then
// Validate() before any I/O, then Run(ctx); wire connects them to cobra. Errors
// carry the next step and an exit code from plugin/clierr's one table
// (docs/exit-codes.md). docs/architecture.md describes the layers.
package plugin
