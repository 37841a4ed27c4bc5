// Package option holds the flag groups that several commands share. Each group is
// a small struct with AddFlags (defines the flags once, with one meaning) and,
// where needed, Validate or Complete.
package option
