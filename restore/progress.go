package restore

import (
	"sync"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
)

// phaseProgress prefixes step ids and labels, so the verification pass and
// the restore pass over the same layers show as separate steps.
type phaseProgress struct {
	p      bundle.Progress
	mu     sync.Mutex
	prefix string
}

func (pp *phaseProgress) set(prefix string) {
	pp.mu.Lock()
	pp.prefix = prefix
	pp.mu.Unlock()
}

func (pp *phaseProgress) get() string {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.prefix
}

func (pp *phaseProgress) Start(id, label string, total int64) {
	if pp.p != nil {
		p := pp.get()
		pp.p.Start(p+id, p+label, total)
	}
}

func (pp *phaseProgress) Add(id string, n int64) {
	if pp.p != nil {
		pp.p.Add(pp.get()+id, n)
	}
}

func (pp *phaseProgress) Done(id string, err error) {
	if pp.p != nil {
		pp.p.Done(pp.get()+id, err)
	}
}
