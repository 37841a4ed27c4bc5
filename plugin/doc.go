// Package plugin holds the cobra commands of kubectl-assisted. It only turns flags
// into the plain structs of the bundle, restore and day2 packages, runs them, and
// renders their results (stdout) and progress (stderr). The work itself lives in
// those cobra-free packages.
package plugin
