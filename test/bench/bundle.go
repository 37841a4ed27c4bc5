package main

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func init() {
	register("bundle", "bundle create/extract (tar+zstd+age, streamed, spooled) vs oras push/pull of the same files and vs the same work done with oras+age+zstd+tar, local docker-registry; peak RSS vs data size", benchBundle)
}

var (
	bundleSize     = flag.String("bundle-size", "1G", "bundle: file-storage size for the push/pull ratio")
	bundleRounds   = flag.Int("bundle-rounds", 5, "bundle: rounds (each on a fresh registry, tools in alternating order); medians are kept")
	bundleRSSSizes = flag.String("bundle-rss-sizes", "100M,512M,2G", "bundle: data sizes for the peak-RSS series")
	bundleMixes    = flag.String("bundle-compressible", "0.5,0", "bundle: shares of compressible (log-like) data, one push/pull comparison each (comma-separated); the rest is gzip archives of incompressible data, like the logs.tar.gz that dominate a real node 0's /data (0: all of it)")
	bundleLink     = flag.Bool("bundle-link", true, "bundle: also time both pulls through a slow link (20 ms each way, 125 MB/s and a 4 MiB window per connection)")
	bundlePipeline = flag.Bool("bundle-pipeline", true, "bundle: also time the reference pipeline (tar|zstd|age then oras push; oras pull then age|zstd|tar)")
)

const (
	// bundleRatioGoal: ours, encrypted, against oras moving the same files
	// in plaintext (issue 39: on both mixes).
	bundleRatioGoal = 1.0
	bundleRSSGoal   = 100 << 20
	bundleFileSize  = 64 << 20
)

// sample is one measured step: the client's wall and CPU time, its peak RSS,
// and the registry's CPU time while the step ran.
type sample struct {
	wall, cpu, regCPU time.Duration
	rss               int64
}

type samples map[string][]sample

func (s samples) add(step string, m measured, reg time.Duration) {
	s[step] = append(s[step], sample{wall: m.wall, cpu: m.cpu, regCPU: reg, rss: m.maxRSS})
}

func (s samples) median(step string, f func(sample) time.Duration) time.Duration {
	var d []time.Duration
	for _, x := range s[step] {
		d = append(d, f(x))
	}
	return median(d)
}

// Step names, in the order of the report.
const (
	pushOurs     = "push ours"
	pushPlain    = "push ours --no-encryption"
	pushOras     = "push oras"
	pullOurs     = "pull ours"
	pullOras     = "pull oras"
	pullOursLink = "pull ours, slow link"
	pullOrasLink = "pull oras, slow link"
	pushPipeEnc  = "push pipeline: tar|zstd|age"
	pushPipeOras = "push pipeline: oras push"
	pullPipeOras = "pull pipeline: oras pull"
	pullPipeDec  = "pull pipeline: age|zstd|tar"
)

func benchBundle(b *bench) error {
	bin := os.Getenv("KUBECTL_ASSISTED_BIN")
	if bin == "" {
		return errors.New("KUBECTL_ASSISTED_BIN is not set (make bench sets it)")
	}
	oras, err := harness.Tool("oras")
	if err != nil {
		return fmt.Errorf("oras: %w (run make tools)", err)
	}
	var ageBin, zstdBin string
	if *bundlePipeline {
		if ageBin, err = harness.Tool("age"); err != nil {
			return fmt.Errorf("age: %w (run make tools, or give -bundle-pipeline=false)", err)
		}
		if zstdBin, err = harness.Tool("zstd"); err != nil {
			return fmt.Errorf("zstd: %w (apt-get install zstd, or give -bundle-pipeline=false)", err)
		}
	}
	size, err := parseSize(*bundleSize)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "kat-bench-bundle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// Our spool (the default for an encrypted registry push) goes under work.
	ourEnv := []string{"XDG_CACHE_HOME=" + filepath.Join(work, "cache")}
	keyFile := filepath.Join(work, "key.txt")
	recipient, err := newAgeKey(keyFile)
	if err != nil {
		return err
	}

	mixes, err := parseMixes(*bundleMixes)
	if err != nil {
		return err
	}
	for _, mix := range mixes {
		if err := benchBundleMix(b, mixRun{bin: bin, oras: oras, ageBin: ageBin, zstdBin: zstdBin, work: work, env: ourEnv, recipient: recipient, keyFile: keyFile, size: size, mix: mix}); err != nil {
			return err
		}
	}
	return benchBundleRSS(b, bin, work, ourEnv, recipient, keyFile, mixes[0])
}

// mixRun is what one push/pull comparison needs.
type mixRun struct {
	bin, oras, ageBin, zstdBin string
	work                       string
	env                        []string
	recipient, keyFile         string
	size                       int64
	mix                        float64
}

// parseMixes reads -bundle-compressible: shares between 0 and 1.
func parseMixes(v string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x < 0 || x > 1 {
			return nil, fmt.Errorf("-bundle-compressible: %q is not a share between 0 and 1", f)
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, errors.New("-bundle-compressible: no share given")
	}
	return out, nil
}

// benchBundleMix compares our push and pull with oras's on size bytes of
// files, mix of them compressible.
func benchBundleMix(b *bench, r mixRun) error {
	bin, oras, ageBin, zstdBin, work, ourEnv, recipient, keyFile, size := r.bin, r.oras, r.ageBin, r.zstdBin, r.work, r.env, r.recipient, r.keyFile, r.size
	label := fmt.Sprintf("[%.0f%% compressible] ", r.mix*100)
	data := filepath.Join(work, "data")
	names, err := generateData(data, size, r.mix)
	if err != nil {
		return err
	}
	fmt.Printf("%sdata: %s in %d files (%.0f%% log-like text, the rest gzip archives of incompressible bytes), encryption on, %d rounds\n", label, mib(size), len(names), r.mix*100, *bundleRounds)

	s := samples{}
	var ourBlob int64
	out := func(n string) string { return filepath.Join(work, n) }
	dropAfter := map[string][]string{
		pullOurs: {"ours-out"}, pullOras: {"oras-out"}, pullOursLink: {"ours-out-link"}, pullOrasLink: {"oras-out-link"},
		pullPipeDec: {"pipe-down", "pipe-out"},
	}
	for round := 0; round < *bundleRounds; round++ {
		reg, err := startRegistry(work)
		if err != nil {
			return err
		}
		ours := reg.host + "/bench/ours:v1"
		theirs := reg.host + "/bench/oras:v1"
		piped := reg.host + "/bench/pipeline:v1"
		step := func(name, dir string, env []string, prog string, args ...string) func() error {
			return func() error {
				syscall.Sync() // no step pays for the writeback of the one before
				before := reg.cpu()
				m, err := runIn(dir, env, prog, args...)
				s.add(name, m, reg.cpu()-before)
				// What a pull wrote goes before the next step rather than at
				// the end of the round: kept, the second pull of every round
				// took 2-2.5x its CPU time, oras's as ours (seen in three
				// runs of five rounds, issue 39; the cause is not
				// established: synced, its writeback ran on the host of this
				// VM while the next step was measured, or the host took back
				// its pages). Dropped at once, oras's pulls all kept their
				// speed; ours still slowed in some rounds (README).
				for _, d := range dropAfter[name] {
					_ = os.RemoveAll(out(d))
				}
				if name == pushOurs && err == nil {
					ourBlob = layerBytes(m.stdout)
				}
				return err
			}
		}
		push := []func() error{
			step(pushOurs, work, ourEnv, bin, "bundle", "create", "--to", ours, "--data-dir", data, "--recipient", recipient, "--plain-http", "--no-progress", "-o", "json"),
			step(pushOras, data, nil, oras, append([]string{"push", "--plain-http", theirs}, names...)...),
			step(pushPlain, work, ourEnv, bin, "bundle", "create", "--to", reg.host+"/bench/plain:v1", "--data-dir", data, "--no-encryption", "--plain-http", "--no-progress", "-o", "json"),
		}
		pull := []func() error{
			step(pullOurs, work, ourEnv, bin, "bundle", "extract", ours, "--allow-unsigned", "--identity", keyFile, "--dir", out("ours-out"), "--plain-http", "--no-progress", "-o", "json"),
			step(pullOras, work, nil, oras, "pull", "--plain-http", theirs, "-o", out("oras-out")),
		}
		var link *slowLink
		if *bundleLink {
			if link, err = startSlowLink(reg.host, 20*time.Millisecond, 125e6, 4<<20); err != nil {
				reg.stop()
				return err
			}
			via := link.addr() + "/bench/"
			pull = append(pull,
				step(pullOursLink, work, ourEnv, bin, "bundle", "extract", via+"ours:v1", "--allow-unsigned", "--identity", keyFile, "--dir", out("ours-out-link"), "--plain-http", "--no-progress", "-o", "json"),
				step(pullOrasLink, work, nil, oras, "pull", "--plain-http", via+"oras:v1", "-o", out("oras-out-link")))
		}
		if round%2 == 1 { // alternate who goes first
			push[0], push[2] = push[2], push[0]
			pull[0], pull[1] = pull[1], pull[0]
			if link != nil {
				pull[2], pull[3] = pull[3], pull[2]
			}
		}
		steps := append(push, pull...)
		if *bundlePipeline {
			blob := out("pipe-up/files.tar.zst.age")
			steps = append(steps,
				step(pushPipeEnc, work, nil, "bash", "-o", "pipefail", "-c",
					fmt.Sprintf("mkdir -p %[1]q && tar -C %[2]q -cf - . | %[3]q -q -1 -T0 | %[4]q -r %[5]q -o %[6]q", filepath.Dir(blob), data, zstdBin, ageBin, recipient, blob)),
				step(pushPipeOras, filepath.Dir(blob), nil, oras, "push", "--plain-http", piped, filepath.Base(blob)),
				// oras pull of our own bundle writes each blob under its
				// title: the files layer as files.tar.zst.age, or in parts
				// (format 1.2) as files.part0001.tar.zst.age, ... in order,
				// each an age stream of a zstd stream; the tar is their
				// plaintexts one after the other.
				step(pullPipeOras, work, nil, oras, "pull", "--plain-http", ours, "-o", out("pipe-down")),
				step(pullPipeDec, work, nil, "bash", "-o", "pipefail", "-c",
					fmt.Sprintf(`mkdir -p %[1]q && shopt -s nullglob && parts=(%[4]q/files.tar.zst.ag[e] %[4]q/files.part*.tar.zst.age) && [ ${#parts[@]} -gt 0 ] && for p in "${parts[@]}"; do %[2]q -d -i %[3]q "$p" | %[5]q -q -d || exit 1; done | tar -C %[1]q -xf -`,
						out("pipe-out"), ageBin, keyFile, out("pipe-down"), zstdBin)),
			)
		}
		for _, st := range steps {
			if err := st(); err != nil {
				if link != nil {
					link.close()
				}
				reg.stop()
				return err
			}
		}
		if link != nil {
			link.close()
		}
		reg.stop()
		for _, d := range []string{"ours-out", "oras-out", "ours-out-link", "oras-out-link", "pipe-up", "pipe-down", "pipe-out"} {
			_ = os.RemoveAll(out(d))
		}
	}

	wall := func(x sample) time.Duration { return x.wall }
	cpu := func(x sample) time.Duration { return x.cpu }
	regCPU := func(x sample) time.Duration { return x.regCPU }
	fmt.Printf("bytes through the registry: ours %s (tar, zstd, age), oras %s (the files as they are)\n", mib(ourBlob), mib(size))
	fmt.Printf("medians of %d rounds             wall  client CPU  registry CPU\n", *bundleRounds)
	for _, st := range []string{pushOurs, pushPlain, pushOras, pullOurs, pullOras, pullOursLink, pullOrasLink, pushPipeEnc, pushPipeOras, pullPipeOras, pullPipeDec} {
		if len(s[st]) > 0 {
			fmt.Printf("  %-28s %7s  %9s  %11s\n", st, secs(s.median(st, wall)), secs(s.median(st, cpu)), secs(s.median(st, regCPU)))
		}
	}
	fmt.Println("rounds (wall s / client CPU s):")
	for _, st := range []string{pushOurs, pushPlain, pushOras, pullOurs, pullOras, pullOursLink, pullOrasLink} {
		var r []string
		for _, x := range s[st] {
			r = append(r, fmt.Sprintf("%.2f/%.2f", x.wall.Seconds(), x.cpu.Seconds()))
		}
		if len(r) > 0 {
			fmt.Printf("  %-28s %s\n", st, strings.Join(r, " "))
		}
	}
	ratioGoal := func(what string, ours, theirs time.Duration, goal float64) {
		what = label + what
		x := ours.Seconds() / theirs.Seconds()
		verdict := "reference, no goal"
		if goal > 0 {
			verdict = fmt.Sprintf("goal <= %.2f: %s", goal, b.goal(what, x <= goal))
		}
		fmt.Printf("RATIO %-58s %.3f  (%s)\n", what, x, verdict)
	}
	ratio := func(what string, ours, theirs time.Duration, goal bool) {
		ratioGoal(what, ours, theirs, map[bool]float64{true: bundleRatioGoal}[goal])
	}
	ratio("push: ours / oras push", s.median(pushOurs, wall), s.median(pushOras, wall), true)
	ratio("pull: ours / oras pull", s.median(pullOurs, wall), s.median(pullOras, wall), true)
	ratioGoal("push: --no-encryption / encrypted", s.median(pushPlain, wall), s.median(pushOurs, wall), 1.0)
	if *bundleLink {
		ratio("pull over the slow link: ours / oras pull", s.median(pullOursLink, wall), s.median(pullOrasLink, wall), false)
		fmt.Println("  20 ms each way, 125 MB/s and 4 MiB in flight per connection: oras pulls three")
		fmt.Println("  blobs at a time; ours turns to ranges once one stream proves slow.")
	}
	fmt.Println("  oras moves the files as they are: no tar, no compression, no encryption, and")
	fmt.Println("  twice the bytes through the registry; ours does all of that and verifies.")
	if *bundlePipeline {
		ratio("push: ours / (tar|zstd|age, oras push)", s.median(pushOurs, wall), s.median(pushPipeEnc, wall)+s.median(pushPipeOras, wall), false)
		ratio("pull: ours / (oras pull, age|zstd|tar)", s.median(pullOurs, wall), s.median(pullPipeOras, wall)+s.median(pullPipeDec, wall), false)
		fmt.Println("  the pipeline does the same work with standard tools, one step after the")
		fmt.Println("  other (oras neither streams nor reads stdin).")
	}
	if *bundleLink {
		fmt.Printf("peak RSS of ours over the slow link: pull %s (reference, no goal)\n", mib(maxRSS(s[pullOursLink])))
	}
	fmt.Printf("peak RSS of ours over the rounds: push %s, push --no-encryption %s, pull %s  goal < %s: %s\n", mib(maxRSS(s[pushOurs])), mib(maxRSS(s[pushPlain])), mib(maxRSS(s[pullOurs])),
		mib(bundleRSSGoal), b.goal(label+"peak RSS over the rounds", max(maxRSS(s[pushOurs]), maxRSS(s[pushPlain]), maxRSS(s[pullOurs])) < bundleRSSGoal))
	return os.RemoveAll(data)
}

func maxRSS(xs []sample) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x.rss)
	}
	return m
}

// layerBytes is the size of the layers in a `bundle create -o json` result.
func layerBytes(out []byte) int64 {
	var r struct {
		Layers []struct {
			Size int64 `json:"size"`
		} `json:"layers"`
	}
	if json.Unmarshal(out, &r) != nil {
		return 0
	}
	var n int64
	for _, l := range r.Layers {
		n += l.Size
	}
	return n
}

// benchBundleRSS creates and extracts bundles of growing size and prints the
// binary's peak RSS (VmHWM): it must stay flat (streaming), under the goal.
func benchBundleRSS(b *bench, bin, work string, env []string, recipient, keyFile string, mix float64) error {
	fmt.Println("peak RSS (VmHWM of the kubectl-assisted process):")
	for _, sz := range strings.Split(*bundleRSSSizes, ",") {
		size, err := parseSize(strings.TrimSpace(sz))
		if err != nil {
			return err
		}
		data := filepath.Join(work, "rss-data")
		if _, err := generateData(data, size, mix); err != nil {
			return err
		}
		reg, err := startRegistry(work)
		if err != nil {
			return err
		}
		ref := reg.host + "/bench/rss:v1"
		c, err := runIn(work, env, bin, "bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient, "--plain-http", "--no-progress", "-o", "json")
		if err != nil {
			reg.stop()
			return err
		}
		x, err := runIn(work, env, bin, "bundle", "extract", ref, "--allow-unsigned", "--identity", keyFile, "--dir", filepath.Join(work, "rss-out"), "--plain-http", "--no-progress", "-o", "json")
		reg.stop()
		_ = os.RemoveAll(filepath.Join(work, "rss-out"))
		_ = os.RemoveAll(data)
		if err != nil {
			return err
		}
		fmt.Printf("  %-10s create %s (%s)  extract %s (%s)  goal < %s: %s\n", mib(size), mib(c.maxRSS), secs(c.wall), mib(x.maxRSS), secs(x.wall),
			mib(bundleRSSGoal), b.goal("peak RSS", c.maxRSS < bundleRSSGoal && x.maxRSS < bundleRSSGoal))
	}
	return nil
}

// generateData writes size bytes in 64 MiB files under dir: a share of
// log-like text (compressible) and the rest gzip archives of random bytes
// (like the gzipped log archives that dominate /data). Returns the file
// names, relative to dir.
func generateData(dir string, size int64, mix float64) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	var names []string
	compressible := int64(float64(size) * mix)
	for i, left := 0, size; left > 0; i++ {
		n := min(left, bundleFileSize)
		text := size-left < compressible
		name := fmt.Sprintf("f%03d.%s", i, map[bool]string{true: "log", false: "tar.gz"}[text])
		if err := writeGenerated(filepath.Join(dir, name), n, text, rng); err != nil {
			return nil, err
		}
		names = append(names, name)
		left -= n
	}
	return names, nil
}

// writeGenerated writes n bytes of log-like text, or a gzip archive of about
// n bytes: stored (uncompressed) deflate blocks of random bytes, a valid gzip
// file whose content no compressor can shrink, like a gzipped log archive.
func writeGenerated(path string, n int64, text bool, rng *rand.Rand) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var gz *gzip.Writer
	if !text {
		if gz, err = gzip.NewWriterLevel(f, gzip.NoCompression); err != nil {
			f.Close()
			return err
		}
		w = gz
	}
	buf := make([]byte, 1<<20)
	for left := n; left > 0; {
		chunk := buf[:min(int64(len(buf)), left)]
		if text {
			fillLog(chunk, rng)
		} else {
			for i := 0; i+8 <= len(chunk); i += 8 {
				binary.LittleEndian.PutUint64(chunk[i:], rng.Uint64())
			}
		}
		if _, err := w.Write(chunk); err != nil {
			f.Close()
			return err
		}
		left -= int64(len(chunk))
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// fillLog writes log-like lines: fixed words, varying numbers.
func fillLog(b []byte, rng *rand.Rand) {
	words := []string{"level=info", "msg=\"host status\"", "cluster_id=", "host_id=", "stage=Installing", "progress=", "func=monitor", "file=host.go:"}
	i := 0
	for i < len(b) {
		line := fmt.Sprintf("time=2025-01-01T00:%02d:%02dZ %s %s%08x %s%d %s\n", rng.IntN(60), rng.IntN(60), words[0], words[2], rng.Uint32(), words[5], rng.IntN(100), words[rng.IntN(len(words))])
		i += copy(b[i:], line)
	}
}

type benchRegistry struct {
	host string
	cmd  *exec.Cmd
	dir  string
}

// startRegistry runs Debian's docker-registry on a fresh storage directory
// (so no blob is already there for either tool).
func startRegistry(work string) (*benchRegistry, error) {
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		return nil, fmt.Errorf("docker-registry: %w (apt-get install docker-registry)", err)
	}
	dir, err := os.MkdirTemp(work, "registry-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "storage"), host)
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &benchRegistry{host: host, cmd: cmd, dir: dir}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			return r, nil
		}
	}
	r.stop()
	return nil, errors.New("docker-registry did not start")
}

// cpu is the registry process's CPU time so far.
func (r *benchRegistry) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

func (r *benchRegistry) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
	_ = os.RemoveAll(r.dir)
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want N, NM or NG", s)
	}
	return n * mult, nil
}
