package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// heapPeak samples the bytes of heap objects (live, and garbage not yet
// collected) every 2 ms from start until stop, and returns the highest
// value above the one at start.
func heapPeak() (stop func() int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 {
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	runtime.GC()
	base := read()
	var peak int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read()-base)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// Rows far wider than the engine's buffers go through a dump, and a restore
// that reads every table back, without the process holding a row: the
// server sends a row as one message of COPY TO, which pgx would hand over
// only whole (bundle/pg, copysplit.go).
func TestWideRowsMemoryStaysFlat(t *testing.T) {
	const rowBytes = 48 << 20
	// Less garbage between collections, so that the peak measures what is
	// held rather than when the collector ran.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	const bound = rowBytes / 2

	src := harness.NewDatabase(t)
	// repeat() makes the values quickly, and TOAST stores them small; COPY
	// sends them whole.
	src.Exec(t, `CREATE TABLE wide (id integer PRIMARY KEY, body text, blob bytea)`)
	src.Exec(t, `INSERT INTO wide SELECT g, repeat(md5(g::text), $1 / 32), decode(repeat(md5('b' || g), 64), 'hex')
		FROM generate_series(1, 3) g`, rowBytes)
	// A point column keeps this table in COPY's text format.
	src.Exec(t, `CREATE TABLE wide_text (id integer, doc text, p point)`)
	src.Exec(t, `INSERT INTO wide_text SELECT g, repeat(md5('t' || g) || E'\\n', $1 / 33), point(g, 2) FROM generate_series(1, 2) g`, rowBytes)

	file := filepath.Join(t.TempDir(), "wide.stream")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	stop := heapPeak()
	_, err = pg.Dump(ctxFor(t), src.URL, f, pg.DumpOptions{})
	peak := stop()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	t.Logf("dump of %d MiB rows: heap peak %d MiB above the start", rowBytes>>20, peak>>20)
	if peak > bound {
		t.Errorf("the dump's heap grew by %d MiB for rows of %d MiB (bound %d MiB): it holds whole rows", peak>>20, rowBytes>>20, bound>>20)
	}

	dst := harness.NewDatabase(t)
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	stop = heapPeak()
	_, err = pg.Restore(ctxFor(t), dst.URL, in, pg.RestoreOptions{Readback: pg.ReadbackAlways, SkipAnalyze: true})
	peak = stop()
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	t.Logf("restore with readback of %d MiB rows: heap peak %d MiB above the start", rowBytes>>20, peak>>20)
	if peak > bound {
		t.Errorf("the restore's heap grew by %d MiB for rows of %d MiB (bound %d MiB): it holds whole rows", peak>>20, rowBytes>>20, bound>>20)
	}
	const sums = `SELECT (SELECT string_agg(md5(body) || md5(blob), ',' ORDER BY id) FROM wide) || (SELECT string_agg(md5(doc), ',' ORDER BY id) FROM wide_text)`
	var want, got string
	if err := src.Connect(t).QueryRow(context.Background(), sums).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if err := dst.Connect(t).QueryRow(context.Background(), sums).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("restored rows hash to %s, the source's to %s", got, want)
	}
}

// TestRoundTripWideHosts: the wide-row data `make bench` measures (hosts
// whose JSON columns are as wide and varied as real ones) is valid JSON
// where assisted-service stores JSON, differs from host to host, and
// survives a dump and restore.
func TestRoundTripWideHosts(t *testing.T) {
	scale := assisted.Scale{Clusters: 3, Hosts: 40, Events: 200, Wide: true}
	src := assisted.NewDatabase(t, scale)
	var hosts, distinct, valid int
	var minRow int64
	err := src.Connect(t).QueryRow(context.Background(), `SELECT count(*), count(DISTINCT inventory),
		count(*) FILTER (WHERE inventory::jsonb ? 'disks' AND validations_info::jsonb ? 'operators'
			AND jsonb_array_length(connectivity::jsonb->'remote_hosts') > 0 AND disks_info::jsonb IS NOT NULL
			AND ntp_sources::jsonb IS NOT NULL AND images_status::jsonb IS NOT NULL AND domain_name_resolutions::jsonb ? 'resolutions'
			AND (free_addresses = '' OR free_addresses::jsonb IS NOT NULL) AND (api_vip_connectivity = '' OR api_vip_connectivity::jsonb IS NOT NULL)),
		min(length(h::text)) FROM public.hosts h`).Scan(&hosts, &distinct, &valid, &minRow)
	if err != nil {
		t.Fatal(err)
	}
	if hosts != scale.Hosts || distinct != hosts || valid != hosts || minRow < 10000 {
		t.Fatalf("%d hosts (want %d), %d distinct inventories, %d with every wide column valid, narrowest row %d bytes (want 10000 or more)",
			hosts, scale.Hosts, distinct, valid, minRow)
	}
	stream, _ := dump(t, src.URL, pg.DumpOptions{})
	dst := harness.NewDatabase(t)
	restore(t, dst.URL, stream, pg.RestoreOptions{})
	assertSameDatabase(t, src.URL, dst.URL)
}
