package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
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

	"filippo.io/age"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

func init() {
	register("bundle", "bundle create/extract (tar+zstd+age, streamed) vs oras push/pull of the same files, local docker-registry; peak RSS vs data size", benchBundle)
}

var (
	bundleSize     = flag.String("bundle-size", "1G", "bundle: file-storage size for the push/pull ratio")
	bundleRounds   = flag.Int("bundle-rounds", 3, "bundle: rounds (each on a fresh registry); the median is kept")
	bundleRSSSizes = flag.String("bundle-rss-sizes", "100M,512M,2G", "bundle: data sizes for the peak-RSS series")
	bundleMix      = flag.Float64("bundle-compressible", 0.5, "bundle: share of compressible (log-like) data; the rest is random like logs.tar.gz")
)

const (
	bundleRatioGoal = 1.05
	bundleRSSGoal   = 100 << 20
	bundleFileSize  = 64 << 20
)

// runMeasured runs a child and returns its wall time and peak RSS (rusage).
func runMeasured(dir, name string, args ...string) (measured, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var errb strings.Builder
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	m := measured{wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru != nil {
		m.maxRSS = ru.Maxrss * 1024
	}
	if err != nil {
		return m, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, errb.String())
	}
	return m, nil
}

func benchBundle(b *bench) error {
	bin := os.Getenv("KUBECTL_ASSISTED_BIN")
	if bin == "" {
		return errors.New("KUBECTL_ASSISTED_BIN is not set (make bench sets it)")
	}
	oras, err := harness.Tool("oras")
	if err != nil {
		return fmt.Errorf("oras: %w (run make tools)", err)
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
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return err
	}
	keyFile := filepath.Join(work, "key.txt")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		return err
	}
	recipient := id.Recipient().String()

	data := filepath.Join(work, "data")
	names, err := generateData(data, size)
	if err != nil {
		return err
	}
	fmt.Printf("data: %s in %d files (%.0f%% compressible), encryption on\n", mib(size), len(names), *bundleMix*100)

	var ourPush, orasPush, ourPull, orasPull []time.Duration
	for round := 0; round < *bundleRounds; round++ {
		reg, err := startRegistry(work)
		if err != nil {
			return err
		}
		ours := reg.host + "/bench/ours:v1"
		theirs := reg.host + "/bench/oras:v1"
		pushOurs := func() error {
			m, err := runMeasured(work, bin, "bundle", "create", "--to", ours, "--data-dir", data, "--recipient", recipient, "--plain-http", "--no-progress", "-o", "json")
			ourPush = append(ourPush, m.wall)
			return err
		}
		pushOras := func() error {
			m, err := runMeasured(data, oras, append([]string{"push", "--plain-http", theirs}, names...)...)
			orasPush = append(orasPush, m.wall)
			return err
		}
		pullOurs := func() error {
			m, err := runMeasured(work, bin, "bundle", "extract", ours, "--identity", keyFile, "--dir", filepath.Join(work, "ours-out"), "--plain-http", "--no-progress", "-o", "json")
			ourPull = append(ourPull, m.wall)
			return err
		}
		pullOras := func() error {
			m, err := runMeasured(work, oras, "pull", "--plain-http", theirs, "-o", filepath.Join(work, "oras-out"))
			orasPull = append(orasPull, m.wall)
			return err
		}
		steps := []func() error{pushOurs, pushOras, pullOurs, pullOras}
		if round%2 == 1 { // alternate who goes first
			steps = []func() error{pushOras, pushOurs, pullOras, pullOurs}
		}
		for _, s := range steps {
			if err := s(); err != nil {
				reg.stop()
				return err
			}
		}
		reg.stop()
		_ = os.RemoveAll(filepath.Join(work, "ours-out"))
		_ = os.RemoveAll(filepath.Join(work, "oras-out"))
	}
	report := func(what string, ours, theirs []time.Duration) {
		o, t := median(ours), median(theirs)
		ratio := o.Seconds() / t.Seconds()
		fmt.Printf("%-5s ours %s  oras %s  ratio %.3f (goal <= %.2f: %s)\n", what, secs(o), secs(t), ratio, bundleRatioGoal, b.goal(what+" ratio", ratio <= bundleRatioGoal))
	}
	report("push", ourPush, orasPush)
	report("pull", ourPull, orasPull)
	_ = os.RemoveAll(data)
	return benchBundleRSS(b, bin, work, recipient, keyFile)
}

// benchBundleRSS creates and extracts bundles of growing size and prints the
// binary's peak RSS: it must stay flat (streaming), under the goal.
func benchBundleRSS(b *bench, bin, work, recipient, keyFile string) error {
	fmt.Println("peak RSS (maxrss of the kubectl-assisted process):")
	for _, s := range strings.Split(*bundleRSSSizes, ",") {
		size, err := parseSize(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		data := filepath.Join(work, "rss-data")
		if _, err := generateData(data, size); err != nil {
			return err
		}
		reg, err := startRegistry(work)
		if err != nil {
			return err
		}
		ref := reg.host + "/bench/rss:v1"
		c, err := runMeasured(work, bin, "bundle", "create", "--to", ref, "--data-dir", data, "--recipient", recipient, "--plain-http", "--no-progress", "-o", "json")
		if err != nil {
			reg.stop()
			return err
		}
		x, err := runMeasured(work, bin, "bundle", "extract", ref, "--identity", keyFile, "--dir", filepath.Join(work, "rss-out"), "--plain-http", "--no-progress", "-o", "json")
		reg.stop()
		_ = os.RemoveAll(filepath.Join(work, "rss-out"))
		_ = os.RemoveAll(data)
		if err != nil {
			return err
		}
		fmt.Printf("  %-8s create %s (%s)  extract %s (%s)  goal < %s: %s\n", mib(size), mib(c.maxRSS), secs(c.wall), mib(x.maxRSS), secs(x.wall),
			mib(bundleRSSGoal), b.goal("peak RSS", c.maxRSS < bundleRSSGoal && x.maxRSS < bundleRSSGoal))
	}
	return nil
}

// generateData writes size bytes in 64 MiB files under dir: a share of
// log-like text (compressible) and the rest random bytes (like the gzipped
// log archives that dominate /data). Returns the file names, relative to dir.
func generateData(dir string, size int64) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	var names []string
	compressible := int64(float64(size) * *bundleMix)
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

func writeGenerated(path string, n int64, text bool, rng *rand.Rand) error {
	f, err := os.Create(path)
	if err != nil {
		return err
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
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
		left -= int64(len(chunk))
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
