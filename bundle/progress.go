package bundle

// Progress receives the progress of long steps (dump, compress, push, pull).
// It uses only plain types so any renderer implements it without importing
// this package. A nil Progress is silent.
type Progress interface {
	// Start begins a step; total is its size in bytes, or 0 when unknown.
	Start(id, label string, total int64)
	// Add reports n more bytes done.
	Add(id string, n int64)
	// Done ends the step; err is nil on success.
	Done(id string, err error)
}

type nopProgress struct{}

func (nopProgress) Start(string, string, int64) {}
func (nopProgress) Add(string, int64)           {}
func (nopProgress) Done(string, error)          {}

func progressOrNop(p Progress) Progress {
	if p == nil {
		return nopProgress{}
	}
	return p
}
