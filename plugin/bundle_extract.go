package plugin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
)

// BundleExtractOptions holds the inputs of `bundle extract`.
type BundleExtractOptions struct {
	cmdEnv
	bundleRead
	Dir string
}

// NewCmdBundleExtract builds `bundle extract`.
func NewCmdBundleExtract(env *Env) *cobra.Command {
	o := &BundleExtractOptions{}
	cmd := &cobra.Command{
		Use:   "extract REF --dir DIR --signer FILE [--identity FILE]",
		Short: "Pull a bundle and unpack it into a new directory (files/, resources.yaml, database.dump)",
		Long: `Check the bundle's signature (--signer, as bundle verify), then pull, verify, decrypt and unpack every layer into DIR, which must not exist: files/ is the
file storage with its modes, times and user.* xattrs, resources.yaml the objects of the
resources layer, database.dump the database engine's stream.

Before the first write, extract makes every check 'bundle verify' makes (every layer
read to its end, decrypted and decoded strictly, the files layer checked entry by entry
and against the counts and sizes the metadata declares), then checks that the target
filesystem has the space and inodes, takes the longest path and the largest extended
attributes. Setuid, setgid and sticky bits are refused unless --preserve-special-bits.
Everything is written to a staging directory next to DIR and renamed to DIR only when
every layer was written; on any failure nothing is left behind. DIR holds secrets: keep
it private.

Exit codes: 0 extracted;` + bundleExitCodes + `;
1 anything else (also too little space on the target).`,
		Example: env.Example(`
  %[1]s assisted bundle extract registry.example.com/assisted/node0:v1 --signer node0.pub --identity key.txt --dir ./node0`),
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "New directory to unpack into")
	o.addFlags(cmd.Flags(), "Accept setuid, setgid and sticky bits in the files layer and restore them (refused by default)")
	return wire(env, cmd, o)
}

// Complete takes the reference.
func (o *BundleExtractOptions) Complete(args []string) error {
	o.Ref = args[0]
	return nil
}

// Validate checks the reference and the flags, and that --dir does not exist
// yet (a stat, nothing is read or written).
func (o *BundleExtractOptions) Validate() error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Dir == "" {
		return errors.New("--dir is required: give a directory that does not exist yet")
	}
	if _, err := os.Lstat(o.Dir); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--dir %s already exists: give a new directory", o.Dir)
	}
	return nil
}

// BundleExtraction is the -o json|yaml result of `bundle extract`.
type BundleExtraction struct {
	APIVersion      string         `json:"apiVersion"`
	Kind            string         `json:"kind"`
	Reference       string         `json:"reference"`
	Digest          string         `json:"digest"`
	Dir             string         `json:"dir"`
	Files           *files.Summary `json:"files,omitempty"`
	Objects         int            `json:"objects,omitempty"`
	DatabaseBytes   int64          `json:"databaseBytes,omitempty"`
	DurationSeconds float64        `json:"durationSeconds"`
}

// Run extracts into a staging directory and renames it into place.
func (o *BundleExtractOptions) Run(ctx context.Context) (err error) {
	env := o.env
	opts, bars, err := o.bundleOpenOptions(&o.bundleRead)
	if err != nil {
		return err
	}
	start := time.Now()
	stage, err := os.MkdirTemp(filepath.Dir(filepath.Clean(o.Dir)), "."+filepath.Base(o.Dir)+".partial-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(stage)
		}
	}()
	out, err := o.extract(ctx, opts, stage)
	if bars != nil {
		bars.Wait()
	}
	if err != nil {
		return bundleError(fmt.Errorf("extract %s: %w", o.Ref, err))
	}
	if err := os.Rename(stage, o.Dir); err != nil {
		return err
	}
	out.Dir, out.DurationSeconds = o.Dir, seconds(time.Since(start))
	if o.Output.Machine() {
		return o.Output.Print(env.Streams.Out, out)
	}
	fmt.Fprintf(env.Streams.Out, "Extracted %s (%s) into %s\n", out.Reference, out.Digest, out.Dir)
	return nil
}

func (o *BundleExtractOptions) extract(ctx context.Context, opts bundle.OpenOptions, stage string) (*BundleExtraction, error) {
	b, err := bundle.Open(ctx, o.Ref, opts)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	// Every check verify makes, before the first write: the whole bundle is
	// read once to check it, then again to write it.
	for _, l := range b.Layers {
		if l.Encrypted && len(opts.Identities) == 0 {
			return nil, &bundle.DecryptError{Layer: l.Kind, Err: bundle.ErrNoIdentity}
		}
	}
	// A bundle that declares its largest entry (format 1.1) is read once:
	// the target is checked against what the signed metadata declares, and
	// every layer is checked as it is written into the private stage, which
	// is removed on the first failure. Otherwise every layer is verified
	// first, then read again.
	checked := (*files.Summary)(nil)
	if b.OnePass() {
		if err := b.CheckIdentities(); err != nil {
			return nil, err
		}
		if bounds, ok := b.FilesBounds(); ok {
			checked = bounds.Checked()
		}
	} else {
		if _, err := b.Verify(ctx, bundle.VerifyOptions{Database: checkDatabaseLayer, PreserveSpecialBits: o.PreserveSpecialBits}); err != nil {
			return nil, err
		}
		checked = b.FilesChecked
	}
	target := files.Target{Dir: filepath.Join(stage, "files"), Checked: checked}
	if m := b.Metadata.Files; m != nil {
		target.Declared = files.Declared{Files: m.Files, Dirs: m.Dirs, Symlinks: m.Symlinks, HardLinks: m.HardLinks, Bytes: m.Bytes}
	}
	if m := b.Metadata.Database; m != nil {
		target.ExtraBytes = m.Bytes
	}
	if err := files.CheckTarget(target); err != nil {
		return nil, err
	}
	out := &BundleExtraction{APIVersion: ResultAPIVersion, Kind: "BundleExtraction", Reference: b.Reference, Digest: b.Descriptor.Digest.String()}
	if _, ok := b.Layer(bundle.LayerDatabase); ok {
		rc, err := b.Database(ctx)
		if err != nil {
			return nil, err
		}
		dump := filepath.Join(stage, "database.dump")
		out.DatabaseBytes, err = writeFile(dump, rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		// The same check as verify (statements included): an unsafe dump
		// never reaches --dir (the stage is removed on error).
		if err := verifyDumpFile(ctx, dump); err != nil {
			return nil, err
		}
	}
	if _, ok := b.Layer(bundle.LayerFiles); ok {
		if out.Files, err = b.ExtractFiles(ctx, filepath.Join(stage, "files"), files.ExtractOptions{Rules: files.Rules{PreserveSpecialBits: o.PreserveSpecialBits}}); err != nil {
			return nil, err
		}
	}
	if _, ok := b.Layer(bundle.LayerResources); ok {
		objs, err := b.Resources(ctx)
		if err != nil {
			return nil, err
		}
		var doc []byte
		for _, obj := range objs {
			y, err := yaml.Marshal(obj.Object)
			if err != nil {
				return nil, err
			}
			doc = append(append(doc, "---\n"...), y...)
		}
		if err := os.WriteFile(filepath.Join(stage, "resources.yaml"), doc, 0o600); err != nil {
			return nil, err
		}
		out.Objects = len(objs)
	}
	return out, nil
}

func writeFile(path string, r io.Reader) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	// Writes of files.CopyBufferSize (the writer is wrapped so bufio does not
	// hand the copy back to the file's own ReadFrom).
	bw := bufio.NewWriterSize(struct{ io.Writer }{f}, files.CopyBufferSize)
	n, err := io.Copy(bw, r)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// verifyDumpFile checks an extracted database stream as bundle verify does.
func verifyDumpFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return checkDatabaseLayer(ctx, f)
}
