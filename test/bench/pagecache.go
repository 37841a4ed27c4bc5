package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// evictFromPageCache drops the file's pages from the page cache, so that the
// binary under test is read back from disk when it first runs, like an
// installed binary, rather than mapped from the pages the linker just
// wrote. Those are large folios, which the kernel maps whole on a fault: on
// this machine's kernel (6.18) `kubectl assisted version` peaked at 70 MiB
// of RSS right after `go build` and at 43 MiB once the pages had been
// evicted (drop_caches), the difference being the binary's own code and
// read-only data (RssFile 65 against 39 MiB during a pull). The peak-RSS
// rows would otherwise measure how the binary was last written.
func evictFromPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("evict %s from the page cache: %w", path, err)
	}
	return nil
}
