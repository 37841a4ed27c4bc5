// Command pgengine runs bundle/pg's Dump or Restore in a process of its own,
// with the stream zstd-compressed in a file as a bundle layer would hold it,
// so that `make bench` measures its time and peak memory the way it measures
// pg_dump's and pg_restore's.
//
//	pgengine [-level layer] dump URL FILE
//	pgengine [-workers N] [-single-transaction] [-v] restore URL FILE
//
// It prints a JSON result: stream and file sizes, and seconds per phase
// (-v: the engine's debug log, with the time of each staged step, on stderr).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
)

var restoreOpts pg.RestoreOptions

type result struct {
	StreamBytes int64              `json:"streamBytes"`
	FileBytes   int64              `json:"fileBytes"`
	Phases      map[string]float64 `json:"phases"`
	Tables      int                `json:"tables"`
}

// phaseClock turns progress events into seconds spent per phase.
type phaseClock struct {
	phase  pg.Phase
	start  time.Time
	phases map[string]float64
}

func (c *phaseClock) event(ev pg.ProgressEvent) {
	if ev.Phase == c.phase {
		return
	}
	now := time.Now()
	if c.phase != "" {
		c.phases[string(c.phase)] += now.Sub(c.start).Seconds()
	}
	c.phase, c.start = ev.Phase, now
}

func main() {
	level := flag.String("level", "layer", "zstd: layer (what bundle create writes: bundle.NewCompressor), or a klauspost level for one stream: fastest, default, better or best")
	readback := flag.String("readback", "auto", "restore: re-read loaded tables: auto, always or never")
	flag.BoolVar(&restoreOpts.SkipAnalyze, "skip-analyze", false, "restore: no ANALYZE")
	flag.BoolVar(&restoreOpts.SingleTransaction, "single-transaction", false, "restore: in one transaction on one connection (no staging)")
	flag.IntVar(&restoreOpts.Workers, "workers", 0, "restore: connections that build indexes (0: the engine's default)")
	flag.IntVar(&restoreOpts.Loaders, "loaders", 0, "restore: connections that load rows (0: the engine's default)")
	flag.StringVar(&restoreOpts.ToastCompression, "toast-compression", "", "restore: lz4, pglz, default (the target's) or empty (the engine's choice)")
	verbose := flag.Bool("v", false, "log the engine's debug records on stderr")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memProfile := flag.String("memprofile", "", "write a heap profile to this file at the run's highest heap (sampled every 20 ms)")
	flag.Parse()
	if *memProfile != "" {
		stop := peakHeapProfile(*memProfile)
		defer stop()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgengine:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "pgengine:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *verbose {
		restoreOpts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	switch *readback {
	case "auto":
		restoreOpts.Readback = pg.ReadbackAuto
	case "always":
		restoreOpts.Readback = pg.ReadbackAlways
	case "never":
		restoreOpts.Readback = pg.ReadbackNever
	default:
		fmt.Fprintln(os.Stderr, "pgengine: -readback is auto, always or never")
		os.Exit(2)
	}
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: pgengine [-level L] dump|restore URL FILE")
		os.Exit(2)
	}
	compress := func(w io.Writer) (io.WriteCloser, error) { return bundle.NewCompressor(w, bundle.LayerDatabase) }
	if *level != "layer" {
		ok, lvl := zstd.EncoderLevelFromString(*level)
		if !ok {
			fmt.Fprintln(os.Stderr, "pgengine: unknown zstd level", *level)
			os.Exit(2)
		}
		compress = func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w, zstd.WithEncoderLevel(lvl)) }
	}
	res, err := runOp(flag.Arg(0), flag.Arg(1), flag.Arg(2), compress)
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "pgengine:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func runOp(op, url, file string, compress func(io.Writer) (io.WriteCloser, error)) (*result, error) {
	ctx := context.Background()
	clock := &phaseClock{phases: map[string]float64{}}
	res := &result{Phases: clock.phases}
	switch op {
	case "dump":
		f, err := os.Create(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		bw := bufio.NewWriterSize(f, 1<<20)
		enc, err := compress(bw)
		if err != nil {
			return nil, err
		}
		sum, err := pg.Dump(ctx, url, enc, pg.DumpOptions{Progress: clock.event})
		if err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		// No fsync: pg_dump runs with --no-sync beside it, and the bench
		// syncs before every step.
		if err := bw.Flush(); err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		res.StreamBytes, res.FileBytes, res.Tables = sum.Bytes, fi.Size(), len(sum.Tables)
	case "restore":
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		dec, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, err
		}
		defer dec.Close()
		sum, err := pg.Restore(ctx, url, io.Reader(dec), withProgress(restoreOpts, clock.event))
		if err != nil {
			return nil, err
		}
		fi, _ := f.Stat()
		res.StreamBytes, res.FileBytes, res.Tables = sum.Bytes, fi.Size(), len(sum.Tables)
	default:
		return nil, fmt.Errorf("unknown operation %q", op)
	}
	clock.event(pg.ProgressEvent{Phase: "end"})
	return res, nil
}

// peakHeapProfile writes a heap profile to path whenever the heap in use
// reaches a new high, until the returned function is called.
func peakHeapProfile(path string) func() {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var peak uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse <= peak+peak/20 {
				continue
			}
			peak = ms.HeapInuse
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
			}
		}
	}()
	return func() { close(done); <-finished }
}

func withProgress(o pg.RestoreOptions, f func(pg.ProgressEvent)) pg.RestoreOptions {
	o.Progress = f
	return o
}
