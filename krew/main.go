// Command krew builds the release: reproducible archives of kubectl-assisted for
// every platform (binary + LICENSE; tar.gz, zip on Windows), a sha256sums.txt,
// and the krew plugin manifest generated from the archives of the platforms that
// krew supports (see krewPlatforms). `make dist` runs it through krew/dist.sh:
//
//	go run ./krew -version v1.2.3 -commit SHA -build-date 2024-05-01T10:00:00Z
//
// Two runs on one commit with one Go toolchain write byte-identical files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// options are the resolved inputs of one dist run.
type options struct {
	Repo        string // repository root
	Out         string // directory for the archives and sha256sums.txt
	Manifest    string // krew manifest path; its file name must be assisted.yaml
	Platforms   []platform
	Stamp       stamp
	URLTemplate string
	MTime       time.Time // every time recorded in an archive
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "dist:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	version := fs.String("version", "", "release version (vX.Y.Z; a commit hash becomes v0.0.0-g<hash>)")
	commit := fs.String("commit", "", "commit stamped into the binary")
	buildDate := fs.String("build-date", "", "RFC 3339 build date stamped into the binary; also every archive member's mtime")
	out := fs.String("out", "dist", "output directory for archives and sha256sums.txt")
	manifestPath := fs.String("manifest", "krew/assisted.yaml", "krew manifest to write")
	platforms := fs.String("platforms", "", "comma- or space-separated OS/ARCH list (default: all release platforms)")
	urlTemplate := fs.String("url-template", defaultURLTemplate, "download URL of an archive; {version} and {archive} are filled in")
	fs.SetOutput(log)
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := options{Repo: ".", Out: *out, Manifest: *manifestPath, URLTemplate: *urlTemplate}
	var err error
	if o.Stamp.Version, err = releaseVersion(*version); err != nil {
		return err
	}
	o.Stamp.Commit, o.Stamp.BuildDate = *commit, *buildDate
	if o.Platforms, err = parsePlatforms(*platforms); err != nil {
		return err
	}
	if o.MTime, err = archiveTime(*buildDate); err != nil {
		return err
	}
	if !slices.ContainsFunc(o.Platforms, func(p platform) bool { return krewPlatforms[p] }) {
		return fmt.Errorf("platforms %v: none is one that krew supports, so there would be no krew manifest", o.Platforms)
	}
	if filepath.Base(o.Manifest) != "assisted.yaml" {
		return fmt.Errorf("manifest %s: krew takes the plugin name from the file name, so it must be assisted.yaml", o.Manifest)
	}
	return dist(ctx, o, log)
}

// archiveTime is the commit date, so archives of one commit match; without
// one, 1980-01-01 (the earliest time a zip can hold).
func archiveTime(buildDate string) (time.Time, error) {
	if buildDate == "" {
		return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC), nil
	}
	t, err := time.Parse(time.RFC3339, buildDate)
	if err != nil {
		return time.Time{}, fmt.Errorf("build date %q: want RFC 3339 (git log -1 --format=%%cI): %w", buildDate, err)
	}
	return t.UTC().Truncate(time.Second), nil
}

func dist(ctx context.Context, o options, log io.Writer) error {
	out, err := absDir(o.Out)
	if err != nil {
		return err
	}
	repo, err := filepath.Abs(o.Repo)
	if err != nil {
		return err
	}
	license := filepath.Join(repo, "LICENSE")
	if _, err := os.Stat(license); err != nil {
		return fmt.Errorf("license: %w", err)
	}
	work, err := os.MkdirTemp(out, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	var archives []archive
	for _, p := range o.Platforms {
		start := time.Now()
		bin := filepath.Join(work, p.OS+"_"+p.Arch, p.binName())
		if err := buildBinary(ctx, repo, p, o.Stamp, bin); err != nil {
			return err
		}
		a := archive{Platform: p, Name: archiveName(o.Stamp.Version, p)}
		// Members in a fixed order; the binary first, as users look for it.
		a.SHA256, err = writeArchive(filepath.Join(out, a.Name), []member{
			{Name: p.binName(), Path: bin, Mode: 0o755},
			{Name: "LICENSE", Path: license, Mode: 0o644},
		}, o.MTime)
		if err != nil {
			return err
		}
		archives = append(archives, a)
		note := ""
		if !krewPlatforms[p] {
			note = "; krew does not support " + p.String() + ", so it is not in the krew manifest"
		}
		fmt.Fprintf(log, "%-15s %s (%s%s)\n", p, a.Name, time.Since(start).Round(100*time.Millisecond), note)
	}
	m, err := manifestFor(o.Stamp.Version, o.URLTemplate, archives)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(out, "sha256sums.txt"), sha256sums(archives)); err != nil {
		return err
	}
	y, err := renderManifest(m)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(o.Manifest, y); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s and %s (version %s)\n", filepath.Join(o.Out, "sha256sums.txt"), o.Manifest, o.Stamp.Version)
	return nil
}

// sha256sums is the `sha256sum -c` format, sorted by file name.
func sha256sums(archives []archive) []byte {
	var b strings.Builder
	byName := func(a, b archive) int { return strings.Compare(a.Name, b.Name) }
	for _, a := range slices.SortedFunc(slices.Values(archives), byName) {
		b.WriteString(a.SHA256 + "  " + a.Name + "\n")
	}
	return []byte(b.String())
}
