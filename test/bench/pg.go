package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func init() {
	register("pg", "database dump/restore (bundle/pg + zstd) vs pg_dump -Fc / pg_restore --single-transaction", benchPG)
}

var (
	pgClusters = flag.Int("pg-clusters", assisted.Bench.Clusters, "pg: clusters to generate")
	pgHosts    = flag.Int("pg-hosts", assisted.Bench.Hosts, "pg: hosts to generate")
	pgEvents   = flag.Int("pg-events", assisted.Bench.Events, "pg: events to generate")
	pgZstd     = flag.String("pg-zstd", "default", "pg: zstd level of our stream (fastest, default, better, best)")
	pgRounds   = flag.Int("pg-rounds", 1, "pg: measure each tool this many times, alternating, and keep the fastest")
	pgReadback = flag.Bool("pg-readback", false, "pg: also measure a restore that re-reads every table (as across PostgreSQL majors)")
)

// maxRSSGoal is the bound on the engine's peak memory.
const maxRSSGoal = 150 << 20

type engineResult struct {
	StreamBytes int64              `json:"streamBytes"`
	FileBytes   int64              `json:"fileBytes"`
	Phases      map[string]float64 `json:"phases"`
}

func benchPG(b *bench) error {
	srv := harness.StartPostgres(b)
	src := srv.NewDatabase(b)
	assisted.LoadSchema(b, src.URL)
	scale := assisted.Scale{Clusters: *pgClusters, Hosts: *pgHosts, Events: *pgEvents, InventoryBytes: assisted.Bench.InventoryBytes}
	start := time.Now()
	if err := assisted.Generate(context.Background(), src.URL, scale); err != nil {
		return err
	}
	// Settle the tables (hint bits, statistics) so both dumps read the same pages.
	src.Exec(b, "VACUUM ANALYZE")
	var dbSize int64
	if err := src.Connect(b).QueryRow(context.Background(), "SELECT pg_database_size(current_database())").Scan(&dbSize); err != nil {
		return err
	}
	fmt.Printf("data: %d clusters, %d hosts, %d events, database %s (generated in %s)\n",
		scale.Clusters, scale.Hosts, scale.Events, mib(dbSize), secs(time.Since(start)))

	dir := b.TempDir()
	engine := filepath.Join(dir, "pgengine")
	if out, err := exec.Command("go", "build", "-o", engine, "./bench/pgengine").CombinedOutput(); err != nil {
		return fmt.Errorf("build pgengine: %v\n%s", err, out)
	}
	pgDump, pgRestore := filepath.Join(srv.BinDir, "pg_dump"), filepath.Join(srv.BinDir, "pg_restore")
	ourFile, refFile := filepath.Join(dir, "ours.tar.zst"), filepath.Join(dir, "reference.dump")

	var ourDump, refDump, ourRestore, refRestore measured
	var ourDumpRes, ourRestoreRes engineResult
	for round := 0; round < *pgRounds; round++ {
		m, err := run(engine, "-level", *pgZstd, "dump", src.URL, ourFile)
		if err != nil {
			return err
		}
		keepFastest(&ourDump, m, &ourDumpRes)
		if m, err = run(pgDump, "-Fc", "--no-sync", "-f", refFile, "-d", src.URL); err != nil {
			return err
		}
		keepFastest(&refDump, m, nil)

		ourTarget, refTarget := srv.NewDatabase(b), srv.NewDatabase(b)
		if m, err = run(engine, "restore", ourTarget.URL, ourFile); err != nil {
			return err
		}
		keepFastest(&ourRestore, m, &ourRestoreRes)
		if m, err = run(pgRestore, "--single-transaction", "-d", refTarget.URL, refFile); err != nil {
			return err
		}
		keepFastest(&refRestore, m, nil)
		if err := sameCounts(b, src, ourTarget, refTarget); err != nil {
			return err
		}
		// Free the disk of this round's targets.
		for _, db := range []*harness.Database{ourTarget, refTarget} {
			src.Exec(b, "DROP DATABASE "+db.Name+" WITH (FORCE)")
		}
	}
	// The restore with every table re-read, as between different majors.
	var readback measured
	var readbackRes engineResult
	if *pgReadback {
		target := srv.NewDatabase(b)
		m, err := run(engine, "-readback", "always", "restore", target.URL, ourFile)
		if err != nil {
			return err
		}
		keepFastest(&readback, m, &readbackRes)
		src.Exec(b, "DROP DATABASE "+target.Name+" WITH (FORCE)")
	}
	refSize := fileSize(b, refFile)

	dumpRatio := ourDump.wall.Seconds() / refDump.wall.Seconds()
	restoreRatio := ourRestore.wall.Seconds() / refRestore.wall.Seconds()
	sizeRatio := float64(ourDumpRes.FileBytes) / float64(refSize)
	fmt.Printf("%-22s %-12s %-30s %-7s %s\n", "", "ours", "reference", "ratio", "goal")
	fmt.Printf("%-22s %-12s %-30s %-7.2f <= 1.0 %s\n", "dump time", secs(ourDump.wall), secs(refDump.wall)+" (pg_dump -Fc)", dumpRatio, b.goal("dump slower than pg_dump", dumpRatio <= 1))
	fmt.Printf("%-22s %-12s %-30s %-7.2f <= 1.0 %s\n", "restore time", secs(ourRestore.wall), secs(refRestore.wall)+" (pg_restore -1)", restoreRatio, b.goal("restore slower than pg_restore", restoreRatio <= 1))
	fmt.Printf("%-22s %-12s %-30s %-7.2f <= 1.0 %s\n", "compressed size", mib(ourDumpRes.FileBytes), mib(refSize)+" (-Fc, gzip)", sizeRatio, b.goal("bigger than pg_dump -Fc", sizeRatio <= 1))
	fmt.Printf("%-22s %-12s %-30s %-7s < 150 MiB %s\n", "peak RSS dump", mib(ourDump.maxRSS), mib(refDump.maxRSS)+" (pg_dump)", "", b.goal("dump memory", ourDump.maxRSS < maxRSSGoal))
	fmt.Printf("%-22s %-12s %-30s %-7s < 150 MiB %s\n", "peak RSS restore", mib(ourRestore.maxRSS), mib(refRestore.maxRSS)+" (pg_restore)", "", b.goal("restore memory", ourRestore.maxRSS < maxRSSGoal))
	if a := ourRestoreRes.Phases["analyze"]; a > 0 {
		fmt.Printf("%-22s %-12s %-30s %-7.2f (pg_restore runs no ANALYZE; pg.Analyze can overlap file restore)\n", "restore w/o ANALYZE",
			fmt.Sprintf("%.2fs", ourRestore.wall.Seconds()-a), secs(refRestore.wall)+" (pg_restore -1)", (ourRestore.wall.Seconds()-a)/refRestore.wall.Seconds())
	}
	if *pgReadback {
		fmt.Printf("%-22s %-12s %-30s %-7.2f (readback is automatic only across majors)\n", "restore, readback", secs(readback.wall), secs(refRestore.wall)+" (pg_restore -1)", readback.wall.Seconds()/refRestore.wall.Seconds())
	}
	fmt.Printf("our stream: %s uncompressed, zstd level %s; rounds: %d (fastest kept)\n", mib(ourDumpRes.StreamBytes), *pgZstd, *pgRounds)
	fmt.Printf("our dump phases:    %s\n", phases(ourDumpRes.Phases))
	fmt.Printf("our restore phases: %s\n", phases(ourRestoreRes.Phases))
	if *pgReadback {
		fmt.Printf("readback restore:   %s\n", phases(readbackRes.Phases))
	}
	return nil
}

func keepFastest(best *measured, m measured, res *engineResult) {
	if best.wall != 0 && best.wall <= m.wall {
		if m.maxRSS > best.maxRSS {
			best.maxRSS = m.maxRSS // report the worst memory seen
		}
		return
	}
	if m.maxRSS < best.maxRSS {
		m.maxRSS = best.maxRSS
	}
	*best = m
	if res != nil {
		_ = json.Unmarshal(m.stdout, res)
	}
}

func fileSize(b *bench, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

func phases(p map[string]float64) string {
	var names []string
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2fs", n, p[n]))
	}
	return strings.Join(parts, ", ")
}

// sameCounts checks that both restores hold the source's rows.
func sameCounts(b *bench, dbs ...*harness.Database) error {
	const q = `SELECT (SELECT count(*) FROM public.events), (SELECT count(*) FROM public.hosts),
		(SELECT sum(length(inventory)) FROM public.hosts), (SELECT last_value FROM public.events_id_seq)`
	var want [4]int64
	for i, db := range dbs {
		var got [4]int64
		if err := db.Connect(b).QueryRow(context.Background(), q).Scan(&got[0], &got[1], &got[2], &got[3]); err != nil {
			return fmt.Errorf("count rows in %s: %w", db.Name, err)
		}
		if i == 0 {
			want = got
		} else if got != want {
			return fmt.Errorf("restored database %s holds %v (events, hosts, inventory bytes, sequence), the source %v", db.Name, got, want)
		}
	}
	return nil
}
