package pg

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func testData(n int, seed int64) []byte {
	r := rand.New(rand.NewSource(seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh\t\n0123"[r.Intn(14)]
	}
	return b
}

// pushAll pushes data in feedChunk pieces and finishes the feed.
func pushAll(t *testing.T, fd *feed, data []byte) {
	t.Helper()
	for i := 0; i < len(data); i += feedChunk {
		end := min(i+feedChunk, len(data))
		if err := fd.push(data[i:end]); err != nil {
			t.Errorf("push: %v", err)
			return
		}
	}
	fd.finish(int64(bytes.Count(data, []byte{'\n'})), nil)
}

// TestFeedSpillsOnlyForAnIdleLoader: with a loader idle, a table bigger than
// the memory bound is read to its end at once (spilled), and comes back
// byte for byte; with no loader idle the reader waits for the consumer.
func TestFeedSpillsOnlyForAnIdleLoader(t *testing.T) {
	f := newFeeder(t.TempDir())
	defer f.close()
	data := testData(3*feedMemory, 1)
	fd := f.newFeed()
	f.loaderIdle() // another loader waits for the next table
	done := make(chan struct{})
	go func() { pushAll(t, fd, data); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the reader did not get to the end of the table with a loader idle")
	}
	if f.spilled < int64(len(data)-feedMemory) {
		t.Fatalf("spilled %d bytes of %d, memory bound %d", f.spilled, len(data), feedMemory)
	}
	got, err := io.ReadAll(fd.reader(context.Background()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d pushed", len(got), err, len(data))
	}
	if f.mem != 0 {
		t.Fatalf("%d bytes still counted in memory", f.mem)
	}

	// No loader idle: the reader blocks at the bound until the table is read.
	f.loaderBusy()
	before := f.spilled
	fd = f.newFeed()
	data = testData(2*feedMemory, 2)
	done = make(chan struct{})
	go func() { pushAll(t, fd, data); close(done) }()
	select {
	case <-done:
		t.Fatal("the reader read past the memory bound with no loader idle")
	case <-time.After(300 * time.Millisecond):
	}
	got, err = io.ReadAll(fd.reader(context.Background()))
	<-done
	if err != nil || !bytes.Equal(got, data) || f.spilled != before {
		t.Fatalf("read back %d bytes (%v), spilled %d more; want the %d pushed, none spilled", len(got), err, f.spilled-before, len(data))
	}
}

// TestFeedSpoolDamage: a spooled chunk that changed on disk is refused.
func TestFeedSpoolDamage(t *testing.T) {
	dir := t.TempDir()
	f := newFeeder(dir)
	defer f.close()
	f.loaderIdle()
	fd := f.newFeed()
	pushAll(t, fd, testData(feedMemory+4*feedChunk, 3))
	if f.spool == nil || f.spilled == 0 {
		t.Fatal("nothing was spooled")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the spool file is visible in its directory: %v", entries)
	}
	if _, err := f.spool.f.WriteAt([]byte("XXXXXXXX"), 16); err != nil {
		t.Fatal(err)
	}
	_, err := io.ReadAll(fd.reader(context.Background()))
	if !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("read of a damaged spool: %v, want ErrChecksumMismatch", err)
	}
}

// TestFeedWithoutSpool: when the spool cannot be created the reader waits
// instead of failing, and nothing is lost.
func TestFeedWithoutSpool(t *testing.T) {
	f := newFeeder(filepath.Join(t.TempDir(), "missing", "dir"))
	defer f.close()
	f.loaderIdle()
	fd := f.newFeed()
	data := testData(2*feedMemory, 4)
	done := make(chan struct{})
	go func() { pushAll(t, fd, data); close(done) }()
	// The reader starts once the writer, its memory full, has tried the
	// spool: otherwise a reader that keeps up never makes it try.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		tried := f.noSpool
		f.mu.Unlock()
		if tried {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never tried the spool with its memory full")
		}
	}
	got, err := io.ReadAll(fd.reader(context.Background()))
	<-done
	if err != nil || !bytes.Equal(got, data) || !f.noSpool || f.spilled != 0 {
		t.Fatalf("read %d bytes (%v), noSpool %v, spilled %d; want all %d, no spool", len(got), err, f.noSpool, f.spilled, len(data))
	}
}

// TestFeedAbort: abort ends a waiting reader and a waiting writer.
func TestFeedAbort(t *testing.T) {
	f := newFeeder(t.TempDir())
	defer f.close()
	full := f.newFeed()
	if err := full.push(testData(feedMemory, 5)); err != nil {
		t.Fatal(err)
	}
	pushed := make(chan error, 1)
	go func() { pushed <- full.push(testData(feedChunk, 6)) }()
	empty := f.newFeed()
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(empty.reader(context.Background()))
		read <- err
	}()
	time.Sleep(100 * time.Millisecond)
	f.abort()
	for what, c := range map[string]chan error{"writer": pushed, "reader": read} {
		select {
		case err := <-c:
			if !errors.Is(err, errLoadAborted) {
				t.Errorf("%s: %v, want errLoadAborted", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s did not end on abort", what)
		}
	}
}

// TestFeedStreamError: a stream error in a table reaches its loader.
func TestFeedStreamError(t *testing.T) {
	f := newFeeder(t.TempDir())
	defer f.close()
	fd := f.newFeed()
	if err := fd.push([]byte("a\n")); err != nil {
		t.Fatal(err)
	}
	boom := corrupt("truncated")
	fd.finish(0, boom)
	got, err := io.ReadAll(fd.reader(context.Background()))
	if string(got) != "a\n" || !errors.Is(err, ErrCorruptStream) {
		t.Fatalf("read %q, %v; want the data then the stream's error", got, err)
	}
}

// TestFeedSpoolCompressed: past spoolRaw the spool is s2-compressed; what is
// read back is what was written, and a compressed chunk that changed on
// disk is refused too.
func TestFeedSpoolCompressed(t *testing.T) {
	defer func(n int64) { spoolRaw = n }(spoolRaw)
	spoolRaw = feedChunk
	data := bytes.Repeat([]byte("42\tcluster-0\t2026-12-04 04:00:00+00\tHost is ready\n"), (feedMemory+8*feedChunk)/48)
	for _, damage := range []bool{false, true} {
		f := newFeeder(t.TempDir())
		f.loaderIdle()
		fd := f.newFeed()
		pushAll(t, fd, data)
		if f.spool == nil || f.spool.size >= f.spilled {
			f.close()
			t.Fatalf("spool of %d bytes for %d spilled: not compressed", f.spool.size, f.spilled)
		}
		if damage {
			if _, err := f.spool.f.WriteAt([]byte("XXXXXXXX"), f.spool.size-64); err != nil {
				t.Fatal(err)
			}
		}
		got, err := io.ReadAll(fd.reader(context.Background()))
		f.close()
		switch {
		case damage && !errors.Is(err, ErrChecksumMismatch):
			t.Fatalf("read of a damaged compressed spool: %v, want ErrChecksumMismatch", err)
		case !damage && (err != nil || !bytes.Equal(got, data)):
			t.Fatalf("read back %d bytes of %d: %v", len(got), len(data), err)
		}
	}
}

// TestFeedRecyclesBuffers: the data passes through the feeds in recycled
// buffers, so a restore does not make garbage at the stream's pace (which
// the heap carried until the next collection: some 15 MiB of a restore's
// peak).
func TestFeedRecyclesBuffers(t *testing.T) {
	f := newFeeder(t.TempDir())
	defer f.close()
	data := testData(feedChunk, 3)
	const pushes = 256 // 64 MiB
	fd := f.newFeed()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	go func() {
		for range pushes {
			if err := fd.push(data); err != nil {
				t.Errorf("push: %v", err)
				return
			}
		}
		fd.finish(0, nil)
	}()
	n, err := io.CopyBuffer(io.Discard, fd.reader(context.Background()), make([]byte, 64<<10))
	runtime.ReadMemStats(&after)
	if err != nil || n != pushes*feedChunk {
		t.Fatalf("read %d bytes (%v), want %d", n, err, pushes*feedChunk)
	}
	// Without recycling it is all 64 MiB and more; with it, well under a
	// MiB (a quarter of the pool's buffers are dropped under -race).
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > pushes*feedChunk/2 {
		t.Fatalf("moving %d MiB through a feed allocated %d MiB", n>>20, alloc>>20)
	}
}
