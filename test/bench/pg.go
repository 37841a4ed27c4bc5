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
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/assisted"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func init() {
	register("pg", "database dump/restore (bundle/pg + zstd) vs pg_dump -Fc / -Fd -j 2 and pg_restore --single-transaction / -j 2, on the bench data and on wide rows", benchPG)
	register("pg-scale", "database dump/restore at growing sizes (~0.5 to 4 GiB): time per GiB and peak memory", benchPGScale)
}

var (
	pgData     = flag.String("pg-data", "bench,wide", "pg: the data sets to measure, in order: bench (many narrow hosts and events), wide (hosts with realistically wide rows)")
	pgClusters = flag.Int("pg-clusters", assisted.Bench.Clusters, "pg: clusters to generate (bench data)")
	pgHosts    = flag.Int("pg-hosts", assisted.Bench.Hosts, "pg: hosts to generate (bench data)")
	pgEvents   = flag.Int("pg-events", assisted.Bench.Events, "pg: events to generate (bench data)")
	pgWideHost = flag.Int("pg-wide-hosts", assisted.WideBench.Hosts, "pg: hosts to generate (wide data)")
	pgWideEvts = flag.Int("pg-wide-events", assisted.WideBench.Events, "pg: events to generate (wide data)")
	pgZstd     = flag.String("pg-zstd", "layer", "pg: zstd of our stream: layer (bundle create's own encoder), or one klauspost stream at fastest, default, better or best")
	pgRounds   = flag.Int("pg-rounds", 3, "pg: rounds; each measures every tool once, in alternating order; medians are reported")
	pgReadback = flag.Bool("pg-readback", false, "pg: also measure a restore that re-reads every table (as across PostgreSQL majors)")
	pgWorkers  = flag.Int("pg-workers", 0, "pg: connections of our restore beside the loader (0: its default)")
	pgScaleGiB = flag.String("pg-scale-gib", "0.5,1,2,4", "pg-scale: database sizes to measure, in GiB (approximate)")
	pgScaleRef = flag.Bool("pg-scale-ref", false, "pg-scale: also run pg_dump -Fc and pg_restore --single-transaction at each size")
)

// maxRSSGoal is the bound on the engine's peak memory.
const maxRSSGoal = 100 << 20

type engineResult struct {
	StreamBytes int64              `json:"streamBytes"`
	FileBytes   int64              `json:"fileBytes"`
	Phases      map[string]float64 `json:"phases"`
}

// series is one tool's runs over the rounds.
type series struct {
	name string
	runs []measured
	res  []engineResult
}

func (s *series) add(m measured, parse bool) {
	s.runs = append(s.runs, m)
	if parse {
		var r engineResult
		_ = json.Unmarshal(m.stdout, &r)
		s.res = append(s.res, r)
	}
}

// median is the median wall time.
func (s *series) median() time.Duration {
	w := make([]time.Duration, len(s.runs))
	for i, m := range s.runs {
		w[i] = m.wall
	}
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	if len(w) == 0 {
		return 0
	}
	if len(w)%2 == 1 {
		return w[len(w)/2]
	}
	return (w[len(w)/2-1] + w[len(w)/2]) / 2
}

// maxRSS is the highest peak memory of any run.
func (s *series) maxRSS() int64 {
	var m int64
	for _, r := range s.runs {
		m = max(m, r.maxRSS)
	}
	return m
}

// walls lists the runs' times, for the noise report.
func (s *series) walls() string {
	var p []string
	for _, m := range s.runs {
		p = append(p, fmt.Sprintf("%.2f", m.wall.Seconds()))
	}
	return strings.Join(p, " ")
}

// medianPhases is the median of each phase over the runs.
func (s *series) medianPhases() map[string]float64 {
	out := map[string]float64{}
	names := map[string]bool{}
	for _, r := range s.res {
		for n := range r.Phases {
			names[n] = true
		}
	}
	for n := range names {
		var v []float64
		for _, r := range s.res {
			v = append(v, r.Phases[n])
		}
		sort.Float64s(v)
		out[n] = v[len(v)/2]
	}
	return out
}

// syncDisks flushes dirty pages so no step pays for the one before.
func syncDisks() { _ = exec.Command("sync").Run() }

// benchPG measures each data set of -pg-data on one server: the bench data
// (assisted.Bench: many hosts with narrow rows, a million events), and the
// wide data (assisted.WideBench: hosts as wide as real ones), whose rows are
// where the memory of a restore and the size of a dump were found lacking.
func benchPG(b *bench) error {
	srv, admin, dir, engine, err := startPGBench(b)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(*pgData, ",") {
		var scale assisted.Scale
		switch strings.TrimSpace(name) {
		case "bench":
			scale = assisted.Scale{Clusters: *pgClusters, Hosts: *pgHosts, Events: *pgEvents, InventoryBytes: assisted.Bench.InventoryBytes}
		case "wide":
			scale = assisted.WideBench
			scale.Hosts, scale.Events = *pgWideHost, *pgWideEvts
		default:
			return fmt.Errorf("-pg-data: unknown data set %q (bench, wide)", name)
		}
		fmt.Printf("-- pg data %s\n", strings.TrimSpace(name))
		if err := benchPGData(b, srv, admin, engine, dir, scale); err != nil {
			return err
		}
	}
	return nil
}

// benchPGData generates one data set and measures every tool on it.
func benchPGData(b *bench, srv *harness.Server, admin *harness.Database, engine, dir string, scale assisted.Scale) error {
	src := srv.NewDatabase(b)
	assisted.LoadSchema(b, src.URL)
	start := time.Now()
	if err := assisted.Generate(context.Background(), src.URL, scale); err != nil {
		return err
	}
	defer admin.Exec(b, "DROP DATABASE "+src.Name+" WITH (FORCE)")
	// Settle the tables (hint bits, statistics) so every dump reads the same pages.
	src.Exec(b, "VACUUM ANALYZE")
	dbSize := databaseSize(b, src)
	shape := "narrow hosts"
	if scale.Wide {
		shape = "wide hosts"
	}
	fmt.Printf("data: %d clusters, %d %s (%s of rows), %d events, database %s (generated in %s); PostgreSQL %s\n",
		scale.Clusters, scale.Hosts, shape, mib(hostsBytes(b, src)), scale.Events, mib(dbSize), secs(time.Since(start)), srv.BinDir)
	pgDump, pgRestore := filepath.Join(srv.BinDir, "pg_dump"), filepath.Join(srv.BinDir, "pg_restore")
	ourFile, fcFile, fdDir := filepath.Join(dir, "ours.tar.zst"), filepath.Join(dir, "reference.dump"), filepath.Join(dir, "reference.dir")

	ourDump := &series{name: "ours"}
	fcDump := &series{name: "pg_dump -Fc"}
	fdDump := &series{name: "pg_dump -Fd -j 2"}
	ourRestore := &series{name: "ours"}
	oneRestore := &series{name: "pg_restore --single-transaction"}
	jRestore := &series{name: "pg_restore -j 2"}
	restoreArgs := []string{"restore"}
	if *pgWorkers > 0 {
		restoreArgs = []string{"-workers", strconv.Itoa(*pgWorkers), "restore"}
	}
	defer func() { _ = os.Remove(ourFile); _ = os.Remove(fcFile); _ = os.RemoveAll(fdDir) }()
	for round := 0; round < *pgRounds; round++ {
		dumps := []func() error{
			func() error {
				m, err := runSynced(engine, "-level", *pgZstd, "dump", src.URL, ourFile)
				ourDump.add(m, true)
				return err
			},
			func() error {
				m, err := runSynced(pgDump, "-Fc", "--no-sync", "-f", fcFile, "-d", src.URL)
				fcDump.add(m, false)
				return err
			},
			func() error {
				_ = os.RemoveAll(fdDir)
				m, err := runSynced(pgDump, "-Fd", "-j", "2", "--no-sync", "-f", fdDir, "-d", src.URL)
				fdDump.add(m, false)
				return err
			},
		}
		if err := alternate(round, dumps); err != nil {
			return err
		}
		ourTarget, oneTarget, jTarget := srv.NewDatabase(b), srv.NewDatabase(b), srv.NewDatabase(b)
		restores := []func() error{
			func() error {
				m, err := runSynced(engine, append(restoreArgs, ourTarget.URL, ourFile)...)
				ourRestore.add(m, true)
				return err
			},
			func() error {
				m, err := runSynced(pgRestore, "--single-transaction", "-d", oneTarget.URL, fcFile)
				oneRestore.add(m, false)
				return err
			},
			func() error {
				m, err := runSynced(pgRestore, "-j", "2", "-d", jTarget.URL, fdDir)
				jRestore.add(m, false)
				return err
			},
		}
		if err := alternate(round, restores); err != nil {
			return err
		}
		if err := sameCounts(b, src, ourTarget, oneTarget, jTarget); err != nil {
			return err
		}
		if err := hasStatistics(b, ourTarget); err != nil {
			return err
		}
		// Free the disk of this round's targets.
		for _, db := range []*harness.Database{ourTarget, oneTarget, jTarget} {
			src.Exec(b, "DROP DATABASE "+db.Name+" WITH (FORCE)")
		}
	}
	// The restore with every table re-read, as between different majors.
	readback := &series{name: "ours, readback"}
	if *pgReadback {
		target := srv.NewDatabase(b)
		m, err := runSynced(engine, "-readback", "always", "restore", target.URL, ourFile)
		if err != nil {
			return err
		}
		readback.add(m, true)
		src.Exec(b, "DROP DATABASE "+target.Name+" WITH (FORCE)")
	}
	binRun, err := benchPGBinary(b, srv, src, dir)
	if err != nil {
		return fmt.Errorf("through the binary: %w", err)
	}
	fcSize := fileSize(b, fcFile)
	var ourSize int64
	if len(ourDump.res) > 0 {
		ourSize = ourDump.res[0].FileBytes
	}

	row := func(what string, ours, ref *series, goal float64) {
		ratio := ours.median().Seconds() / ref.median().Seconds()
		fmt.Printf("%-24s %-10s %-40s %-6.2f <= %-5.2f %s\n", what, secs(ours.median()), secs(ref.median())+" ("+ref.name+")", ratio, goal,
			b.goal(fmt.Sprintf("%s: %.2f > %.2f", what, ratio, goal), ratio <= goal))
	}
	fmt.Printf("%-24s %-10s %-40s %-6s %s\n", "", "ours", "reference", "ratio", "goal")
	row("dump time", ourDump, fcDump, 0.35)
	row("dump time", ourDump, fdDump, 0.5)
	sizeRatio := float64(ourSize) / float64(fcSize)
	fmt.Printf("%-24s %-10s %-40s %-6.2f <= %-5.2f %s\n", "dump size", mib(ourSize), mib(fcSize)+" (pg_dump -Fc, gzip)", sizeRatio, 0.85,
		b.goal(fmt.Sprintf("dump size: %.2f > 0.85", sizeRatio), sizeRatio <= 0.85))
	row("restore time", ourRestore, oneRestore, 0.75)
	row("restore time", ourRestore, jRestore, 1.0)
	for _, s := range []struct {
		what      string
		ours, ref *series
	}{{"peak RSS dump", ourDump, fcDump}, {"peak RSS restore", ourRestore, oneRestore}} {
		fmt.Printf("%-24s %-10s %-40s %-6s < 100 MiB %s\n", s.what, mib(s.ours.maxRSS()), mib(s.ref.maxRSS())+" ("+s.ref.name+")", "",
			b.goal(s.what+" "+mib(s.ours.maxRSS()), s.ours.maxRSS() < maxRSSGoal))
	}
	fmt.Printf("%-24s %-10s %-40s\n", "", "", mib(jRestore.maxRSS())+" (pg_restore -j 2), "+mib(fdDump.maxRSS())+" (pg_dump -Fd -j 2)")
	binRun.report(b, ourDump, ourRestore)
	if *pgReadback {
		fmt.Printf("%-24s %-10s %-40s %-6.2f (readback is automatic only across majors)\n", "restore, readback", secs(readback.median()),
			secs(oneRestore.median())+" ("+oneRestore.name+")", readback.median().Seconds()/oneRestore.median().Seconds())
	}
	fmt.Printf("our restore includes ANALYZE (statistics present when it returns); pg_restore runs none\n")
	fmt.Printf("our stream: %s uncompressed, zstd level %s; %d rounds in alternating order, medians\n", mib(ourDump.res[0].StreamBytes), *pgZstd, *pgRounds)
	fmt.Printf("rounds (s): dump ours %s | -Fc %s | -Fd -j 2 %s\n", ourDump.walls(), fcDump.walls(), fdDump.walls())
	fmt.Printf("rounds (s): restore ours %s | --single-transaction %s | -j 2 %s\n", ourRestore.walls(), oneRestore.walls(), jRestore.walls())
	fmt.Printf("our dump phases (median):    %s\n", phases(ourDump.medianPhases()))
	fmt.Printf("our restore phases (median): %s\n", phases(ourRestore.medianPhases()))
	if *pgReadback {
		fmt.Printf("readback restore:            %s\n", phases(readback.medianPhases()))
	}
	return nil
}

// startPGBench starts the pg benchmarks' own server (autovacuum off, see
// quietServer) with a database to administer it from, and builds the
// engine into a temporary directory, which it returns for the benchmark's
// files.
func startPGBench(b *bench) (srv *harness.Server, admin *harness.Database, dir, engine string, err error) {
	srv = harness.StartPostgres(b)
	admin = srv.NewDatabase(b)
	quietServer(b, admin)
	dir = b.TempDir()
	engine, err = buildEngine(dir)
	return srv, admin, dir, engine, err
}

// alternate runs the steps of a round, in reverse order every other round.
// quietServer turns autovacuum off on the bench's private server: a table
// that pg_restore loaded is vacuumed and analyzed by autovacuum within a
// minute (seen: some 20 s of a worker's time for this data), so whatever
// step ran then paid for the restore before it. Our restore analyzes
// inline, and that counts in its time; pg_restore's later autovacuum work
// counts in no step.
func quietServer(b *bench, db *harness.Database) {
	db.Exec(b, "ALTER SYSTEM SET autovacuum = off")
	db.Exec(b, "SELECT pg_catalog.pg_reload_conf()")
}

func alternate(round int, steps []func() error) error {
	for i := range steps {
		k := i
		if round%2 == 1 {
			k = len(steps) - 1 - i
		}
		if err := steps[k](); err != nil {
			return err
		}
	}
	return nil
}

func runSynced(name string, args ...string) (measured, error) {
	syncDisks()
	return run(name, args...)
}

func buildEngine(dir string) (string, error) {
	engine := filepath.Join(dir, "pgengine")
	if out, err := exec.Command("go", "build", "-o", engine, "./bench/pgengine").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build pgengine: %v\n%s", err, out)
	}
	return engine, nil
}

// hostsBytes is the size of the hosts' rows as COPY text would carry them.
func hostsBytes(b *bench, db *harness.Database) int64 {
	var n int64
	if err := db.Connect(b).QueryRow(context.Background(), "SELECT coalesce(sum(length(h::text)), 0) FROM public.hosts h").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func databaseSize(b *bench, db *harness.Database) int64 {
	var n int64
	if err := db.Connect(b).QueryRow(context.Background(), "SELECT pg_database_size(current_database())").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// benchPGScale dumps and restores databases of growing size: the time per
// GiB must stay about the same (linear) and the peak memory flat.
func benchPGScale(b *bench) error {
	named := false
	for _, a := range flag.Args() {
		named = named || a == "pg-scale"
	}
	if !named {
		fmt.Println("not run unless named (it generates and moves about 8 GiB, most of an hour on two cores): go run ./bench pg-scale")
		return nil
	}
	var targets []float64
	for _, f := range strings.Split(*pgScaleGiB, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			return fmt.Errorf("-pg-scale-gib: bad size %q", f)
		}
		targets = append(targets, v)
	}
	srv, admin, dir, engine, err := startPGBench(b)
	if err != nil {
		return err
	}
	pgDump, pgRestore := filepath.Join(srv.BinDir, "pg_dump"), filepath.Join(srv.BinDir, "pg_restore")
	ourFile, fcFile := filepath.Join(dir, "ours.tar.zst"), filepath.Join(dir, "reference.dump")
	// bytesPerUnit: database bytes of one Bench scale; refined after each point.
	bytesPerUnit := float64(616 << 20)
	type point struct {
		size                      int64
		dump, restore             measured
		refDump, refRestore       measured
		dumpPerGiB, restorePerGiB float64
	}
	var points []point
	fmt.Printf("%-12s %-10s %-10s %-12s %-10s %-10s %-12s %s\n", "database", "dump", "s/GiB", "dump RSS", "restore", "s/GiB", "restore RSS", "reference (pg_dump -Fc / pg_restore -1)")
	for _, gib := range targets {
		f := gib * (1 << 30) / bytesPerUnit
		s := assisted.Scale{Clusters: max(1, int(float64(assisted.Bench.Clusters)*f)), Hosts: int(float64(assisted.Bench.Hosts) * f),
			Events: int(float64(assisted.Bench.Events) * f), InventoryBytes: assisted.Bench.InventoryBytes}
		src := srv.NewDatabase(b)
		assisted.LoadSchema(b, src.URL)
		if err := assisted.Generate(context.Background(), src.URL, s); err != nil {
			return err
		}
		src.Exec(b, "VACUUM ANALYZE")
		size := databaseSize(b, src)
		bytesPerUnit = float64(size) / f
		p := point{size: size}
		if p.dump, err = runSynced(engine, "-level", *pgZstd, "dump", src.URL, ourFile); err != nil {
			return err
		}
		dst := srv.NewDatabase(b)
		if p.restore, err = runSynced(engine, "restore", dst.URL, ourFile); err != nil {
			return err
		}
		if err := sameCounts(b, src, dst); err != nil {
			return err
		}
		ref := ""
		if *pgScaleRef {
			if p.refDump, err = runSynced(pgDump, "-Fc", "--no-sync", "-f", fcFile, "-d", src.URL); err != nil {
				return err
			}
			refDst := srv.NewDatabase(b)
			if p.refRestore, err = runSynced(pgRestore, "--single-transaction", "-d", refDst.URL, fcFile); err != nil {
				return err
			}
			ref = fmt.Sprintf("%s / %s (ratios %.2f / %.2f)", secs(p.refDump.wall), secs(p.refRestore.wall),
				p.dump.wall.Seconds()/p.refDump.wall.Seconds(), p.restore.wall.Seconds()/p.refRestore.wall.Seconds())
			admin.Exec(b, "DROP DATABASE "+refDst.Name+" WITH (FORCE)")
		}
		g := float64(size) / (1 << 30)
		p.dumpPerGiB, p.restorePerGiB = p.dump.wall.Seconds()/g, p.restore.wall.Seconds()/g
		points = append(points, p)
		fmt.Printf("%-12s %-10s %-10.2f %-12s %-10s %-10.2f %-12s %s\n", mib(size), secs(p.dump.wall), p.dumpPerGiB, mib(p.dump.maxRSS),
			secs(p.restore.wall), p.restorePerGiB, mib(p.restore.maxRSS), ref)
		for _, db := range []*harness.Database{src, dst} {
			admin.Exec(b, "DROP DATABASE "+db.Name+" WITH (FORCE)")
		}
		_ = os.Remove(ourFile)
		_ = os.Remove(fcFile)
	}
	if len(points) < 2 {
		return nil
	}
	// Linear: the largest point's time per GiB within 25% of the second's
	// (the smallest pays fixed costs, start-up and catalog, over little data).
	base, last := points[1], points[len(points)-1]
	if len(points) == 2 {
		base = points[0]
	}
	// Flat is per step: a dump and a restore hold different buffers, so
	// each is compared with itself across the sizes.
	spread := func(rss func(point) int64) (lo, hi int64) {
		lo = 1 << 62
		for _, p := range points {
			lo, hi = min(lo, rss(p)), max(hi, rss(p))
		}
		return lo, hi
	}
	dumpLo, dumpHi := spread(func(p point) int64 { return p.dump.maxRSS })
	restoreLo, restoreHi := spread(func(p point) int64 { return p.restore.maxRSS })
	dumpGrowth, restoreGrowth := last.dumpPerGiB/base.dumpPerGiB, last.restorePerGiB/base.restorePerGiB
	fmt.Printf("dump s/GiB at %s / at %s: %.2f (<= 1.25) %s\n", mib(last.size), mib(base.size), dumpGrowth,
		b.goal(fmt.Sprintf("dump time grows faster than the data: %.2f", dumpGrowth), dumpGrowth <= 1.25))
	fmt.Printf("restore s/GiB at %s / at %s: %.2f (<= 1.25) %s\n", mib(last.size), mib(base.size), restoreGrowth,
		b.goal(fmt.Sprintf("restore time grows faster than the data: %.2f", restoreGrowth), restoreGrowth <= 1.25))
	for _, st := range []struct {
		what   string
		lo, hi int64
	}{{"dump", dumpLo, dumpHi}, {"restore", restoreLo, restoreHi}} {
		fmt.Printf("peak RSS of the %s over every point: %s to %s (< 100 MiB, spread <= 16 MiB) %s\n", st.what, mib(st.lo), mib(st.hi),
			b.goal(st.what+" memory grows with the data", st.hi < maxRSSGoal && st.hi-st.lo <= 16<<20))
	}
	return nil
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

// hasStatistics checks that our restore left planner statistics on its
// biggest tables (it runs ANALYZE; pg_restore does not).
func hasStatistics(b *bench, db *harness.Database) error {
	var n int
	if err := db.Connect(b).QueryRow(context.Background(), `SELECT count(DISTINCT tablename) FROM pg_catalog.pg_stats
		WHERE schemaname = 'public' AND tablename IN ('events', 'hosts')`).Scan(&n); err != nil {
		return err
	}
	if n != 2 {
		return fmt.Errorf("our restore left statistics on %d of events and hosts, want 2", n)
	}
	return nil
}
