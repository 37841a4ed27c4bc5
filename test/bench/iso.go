package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
	"github.com/kubectl-assisted/kubectl-assisted/test/synthetic"
)

func init() {
	register("iso", "add-nodes create from a 1 GiB base ISO vs cp of the same file (goal: ratio <= 1.2, peak RSS < 100 MiB)", benchISO)
}

const (
	isoRounds  = 5
	isoSize    = 1 << 30
	isoGoal    = 1.2
	isoRSSGoal = 100 << 20
)

// benchISO builds a 1 GiB live ISO from a coreos-installer fixture by
// replacing its /images/pxeboot/rootfs.img with ~1 GiB of random data
// (xorriso keeps the boot records, igninfo.json and kargs.json, whose offsets
// are relative to their files), then times, alternately in the same run,
// `cp base copy` and `kubectl assisted add-nodes create --base-iso base`
// (offline from a cluster profile; the payload's image-references come from
// a local registry), and reports the ratio of the medians and the peak RSS.
func benchISO(b *bench) error {
	for _, tool := range []string{"xorriso", "xz", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed (test/tools/install.sh): %w", tool, err)
		}
	}
	dir := b.TempDir()
	small := filepath.Join(dir, "small.iso")
	raw, err := os.ReadFile(harness.LiveISO(b, "embed-areas-2023-07.x86_64.iso"))
	if err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	if err := os.WriteFile(small, raw, 0o644); err != nil {
		return err
	}
	filler := filepath.Join(dir, "rootfs.img")
	if err := writeRandom(filler, isoSize-int64(len(raw))); err != nil {
		return err
	}
	base := filepath.Join(dir, "base.iso")
	if out, err := exec.Command("xorriso", "-indev", small, "-outdev", base, "-boot_image", "any", "keep",
		"-map", filler, "/images/pxeboot/rootfs.img", "-commit").CombinedOutput(); err != nil {
		return fmt.Errorf("xorriso: %w\n%s", err, out)
	}
	_ = os.Remove(filler)
	st, err := os.Stat(base)
	if err != nil {
		return err
	}

	reg := harness.StartInProcessRegistry(b)
	rel := synthetic.PushRelease(b, synthetic.ReleaseOptions{Host: reg.Host, ReleaseRepo: "ocp/release", ArtRepo: "ocp/art-dev", ISOs: map[string][]byte{"x86_64": raw}})
	profile := filepath.Join(dir, "cluster.json")
	if err := writeProfile(profile, rel.Ref); err != nil {
		return err
	}
	nodes := filepath.Join(dir, "nodes-config.yaml")
	if err := os.WriteFile(nodes, []byte("hosts:\n- hostname: extra-worker-0\n  interfaces: [{name: eth0, macAddress: \"00:f4:3d:a0:0e:2b\"}]\n"), 0o644); err != nil {
		return err
	}
	bin := os.Getenv("KUBECTL_ASSISTED_BIN")
	if bin == "" {
		bin = harness.PluginBinary(b)
	}
	out := filepath.Join(dir, "out")
	cpDst := filepath.Join(dir, "cp.iso")
	node := filepath.Join(out, "node.x86_64.iso")
	ours := func(extra ...string) (measured, error) {
		args := append([]string{"add-nodes", "create", "-f", nodes, "--dir", out, "--base-iso", base, "--cluster-profile", profile, "--plain-http", "-o", "json"}, extra...)
		return run(bin, args...)
	}
	// Warm the page cache for both sides.
	if _, err := run("cp", base, cpDst); err != nil {
		return err
	}
	_ = os.Remove(cpDst)

	var cpTimes, ourTimes []time.Duration
	var peak int64
	for i := 0; i < isoRounds; i++ {
		m, err := run("cp", base, cpDst)
		if err != nil {
			return err
		}
		cpTimes = append(cpTimes, m.wall)
		_ = os.Remove(cpDst)
		m, err = ours()
		if err != nil {
			return err
		}
		ourTimes = append(ourTimes, m.wall)
		peak = max(peak, m.maxRSS)
		if i == 0 {
			var res struct {
				Artifacts []struct{ Size int64 }
			}
			if err := json.Unmarshal(m.stdout, &res); err != nil || len(res.Artifacts) != 1 || res.Artifacts[0].Size != st.Size() {
				return fmt.Errorf("unexpected result %s (%v)", m.stdout, err)
			}
		}
		_ = os.Remove(node)
	}
	// The fixed cost: the same command on the 1 MiB fixture ISO.
	fixed, err := run(bin, "add-nodes", "create", "-f", nodes, "--dir", out, "--base-iso", small, "--cluster-profile", profile, "--plain-http", "-o", "json")
	if err != nil {
		return err
	}
	_ = os.Remove(node)
	withSum, err := ours("--checksum")
	if err != nil {
		return err
	}
	_ = os.Remove(node)
	cpMed, ourMed := median(cpTimes), median(ourTimes)
	ratio := ourMed.Seconds() / cpMed.Seconds()
	fmt.Printf("base ISO            %s (fixture embed-areas-2023-07.x86_64 with a random 1 GiB rootfs.img, rebuilt by xorriso)\n", mib(st.Size()))
	fmt.Printf("cp                  median %s of %d %v\n", secs(cpMed), isoRounds, roundAll(cpTimes))
	fmt.Printf("add-nodes create    median %s of %d %v\n", secs(ourMed), isoRounds, roundAll(ourTimes))
	fmt.Printf("ratio               %.2f (goal <= %.1f) %s\n", ratio, isoGoal, b.goal("ratio above 1.2", ratio <= isoGoal))
	fmt.Printf("peak RSS            %s (goal < %s) %s\n", mib(peak), mib(isoRSSGoal), b.goal("RSS at or above 100 MiB", peak < isoRSSGoal))
	fmt.Printf("fixed cost          %s (same command on the 1 MiB fixture: start-up, payload read, ignition, token)\n", secs(fixed.wall))
	fmt.Printf("with --checksum     %s, ratio %.2f, peak RSS %s (sha256 reads the 1 GiB once more; no goal)\n", secs(withSum.wall), withSum.wall.Seconds()/cpMed.Seconds(), mib(withSum.maxRSS))
	return nil
}

func writeRandom(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.NewChaCha8([32]byte{1, 2, 3})
	buf := make([]byte, 1<<20)
	for n > 0 {
		_, _ = r.Read(buf)
		k := min(n, int64(len(buf)))
		if _, err := w.Write(buf[:k]); err != nil {
			f.Close()
			return err
		}
		n -= k
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeProfile(path, release string) error {
	ps, _ := json.Marshal(map[string]any{"auths": map[string]any{}})
	p := map[string]any{
		"apiVersion": "assisted.kubectl.io/v1alpha1", "kind": "ClusterProfile", "capturedAt": time.Now().UTC().Format(time.RFC3339),
		"clusterID": "2a6e1b36-6fb5-4c5f-9f4e-3c0c1e8d2f10", "clusterName": "bench", "baseDomain": "example.org",
		"apiDNSName": "api.bench.example.org", "version": "4.17.3", "releaseImage": release, "platform": "baremetal",
		"architecture": "x86_64", "pullSecret": string(ps), "nodes": []any{map[string]any{"name": "master-0", "addresses": []string{"192.168.111.20"}}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func roundAll(d []time.Duration) []string {
	var out []string
	for _, x := range d {
		out = append(out, secs(x))
	}
	return out
}
