// Package progress draws progress bars on a terminal (vbauerster/mpb) for the
// long steps of any command: dump, compress, push, pull, write an ISO. Its
// Bars type has the plain Start/Add/Done methods that library packages accept
// as a progress callback (bundle.Progress and the like), so libraries never
// import it and never print.
//
// Commands create Bars only when option.Terminal.ShowProgress says so; else
// they pass nil (silent).
package progress

import (
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Bars renders one bar per step id. It is safe for concurrent use.
type Bars struct {
	p    *mpb.Progress
	mu   sync.Mutex
	bars map[string]*mpb.Bar
}

// Options tune New; the zero value suits a terminal.
type Options struct {
	// Width of the bar area in columns; 0 means mpb's default.
	Width int
	// RefreshRate of the redraw; 0 means 150ms.
	RefreshRate time.Duration
	// ForceTTY draws even when w is not a terminal (tests).
	ForceTTY bool
}

// New starts drawing on w (stderr).
func New(w io.Writer, opts Options) *Bars {
	rate := opts.RefreshRate
	if rate == 0 {
		rate = 150 * time.Millisecond
	}
	copts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithRefreshRate(rate), mpb.WithAutoRefresh()}
	if opts.Width > 0 {
		copts = append(copts, mpb.WithWidth(opts.Width))
	}
	if opts.ForceTTY {
		copts = append(copts, mpb.ForceTTY())
	}
	return &Bars{p: mpb.New(copts...), bars: map[string]*mpb.Bar{}}
}

// Start adds a bar for step id; total is in bytes, 0 when unknown (the bar
// then shows bytes and speed without a percentage).
func (b *Bars) Start(id, label string, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.bars[id]; ok {
		return
	}
	prepend := []decor.Decorator{decor.Name(label, decor.WC{C: decor.DindentRight | decor.DextraSpace})}
	var appendD []decor.Decorator
	if total > 0 {
		prepend = append(prepend, decor.CountersKibiByte("% .1f / % .1f"))
		appendD = append(appendD, decor.Percentage(decor.WC{W: 5}))
	} else {
		prepend = append(prepend, decor.CurrentKibiByte("% .1f"))
	}
	appendD = append(appendD,
		decor.Name(" "), decor.AverageSpeed(decor.SizeB1024(0), "% .1f"),
		decor.Name(" "), decor.Elapsed(decor.ET_STYLE_GO),
		decor.OnAbort(decor.Name(""), " failed"))
	bar := b.p.AddBar(total, mpb.PrependDecorators(prepend...), mpb.AppendDecorators(appendD...))
	b.bars[id] = bar
}

// Add advances step id by n bytes.
func (b *Bars) Add(id string, n int64) {
	b.mu.Lock()
	bar := b.bars[id]
	b.mu.Unlock()
	if bar != nil {
		bar.IncrInt64(n)
	}
}

// Done completes step id, or marks it failed when err is not nil.
func (b *Bars) Done(id string, err error) {
	b.mu.Lock()
	bar := b.bars[id]
	b.mu.Unlock()
	if bar == nil {
		return
	}
	if err != nil {
		bar.Abort(false)
		return
	}
	bar.SetTotal(-1, true)
}

// Wait finishes drawing: it completes any bar still running (as failed) and
// returns when the last frame is written. Call it before printing results.
func (b *Bars) Wait() {
	b.mu.Lock()
	for _, bar := range b.bars {
		if !bar.Completed() {
			bar.Abort(false)
		}
	}
	b.mu.Unlock()
	b.p.Wait()
}
