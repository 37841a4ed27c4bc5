package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"filippo.io/age"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-assisted/kubectl-assisted/bundle"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/files"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
	"github.com/kubectl-assisted/kubectl-assisted/bundle/resources"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/clierr"
	"github.com/kubectl-assisted/kubectl-assisted/plugin/option"
)

// Exit codes of the bundle commands, one per failure kind, so scripts can
// tell an altered bundle from a wrong key: the numbers of clierr's table.
const (
	ExitBundleIntegrity   = clierr.ExitBundleIntegrity
	ExitBundleDecrypt     = clierr.ExitBundleDecrypt
	ExitBundleVersion     = clierr.ExitBundleVersion
	ExitBundleFormat      = clierr.ExitBundleFormat
	ExitBundleUnsafeEntry = clierr.ExitBundleUnsafeEntry
	ExitBundleMissingBlob = clierr.ExitBundleMissingBlob
)

// bundleExitCodes is the exit-code paragraph of the bundle-reading commands.
const bundleExitCodes = `
3 a blob was altered or truncated, or its ciphertext fails authentication (tampered);
4 decryption failed (no or wrong --identity); 5 unsupported format major version, or
the manifest and the metadata name different versions; 6 not a bundle, or content that
does not decode or holds less than its metadata declares; 7 unsafe content (an entry
outside the root, a device or FIFO, a sparse file, a name over 255 bytes or a path over
4095, an extended attribute outside user.* or over the Linux limits, a setuid, setgid
or sticky bit without --preserve-special-bits, more entries or bytes than the metadata
declares, a name or attribute the target filesystem cannot hold, a database statement
that is not one a dump writes); 8 a blob the manifest references is missing; 9 not
signed by a --signer key (unsigned, another key, or altered), checked before anything
else is read`

// registryOptions turns the registry flags into the bundle package's options.
func registryOptions(r option.Registry) oci.RegistryOptions {
	return oci.RegistryOptions{
		AuthFile:              r.ConfigFile,
		CAFile:                r.CAFile,
		PlainHTTP:             r.PlainHTTP,
		InsecureSkipTLSVerify: r.InsecureSkipTLSVerify,
		UserAgent:             "kubectl-assisted/" + CurrentVersion().Version,
	}
}

// Resources modes of --resources.
const (
	resourcesNone    = "none"
	resourcesCluster = "cluster"
)

// bundleFlags are the flags `bundle create` and `migrate` share: what goes
// into the bundle, its keys, where it goes and how it is pushed. They are
// declared once, here, so they have the same names, meaning and defaults in
// both commands.
type bundleFlags struct {
	To                 string
	DataDir            string
	Exclude            []string
	Resources          string
	ManifestsDir       string
	LocalAuthNamespace string
	Recipients         []string
	RecipientFile      []string
	NoEncryption       bool
	SpoolDir           string
	NoSpool            bool
	Postgres           option.Postgres
	DBTables           dbTables
	Registry           option.Registry
	Output             option.Output
	Terminal           option.Terminal
}

// AddFlags adds the group; nodeZeroAPI names the flags that reach node 0's
// API for --resources cluster in this command.
func (f *bundleFlags) AddFlags(fs *pflag.FlagSet, nodeZeroAPI string) {
	fs.StringVar(&f.To, "to", "", "Where the bundle goes: HOST[:PORT]/REPO[:TAG], oci:DIR[:TAG] or oci-archive:FILE[:TAG]")
	fs.StringVar(&f.DataDir, "data-dir", "/data", "Node 0's assisted-service file storage directory; empty leaves the files layer out")
	fs.StringArrayVar(&f.Exclude, "exclude", nil, "Also leave out paths under --data-dir matching this pattern (path.Match, relative, e.g. '*/logs'); installercache and disconnected-ignition* are always left out")
	fs.StringVar(&f.Resources, "resources", resourcesNone, "Resources layer: none, or cluster (the assisted CRs and the Secrets/ConfigMaps they reference, exported from node 0's API: "+nodeZeroAPI+")")
	fs.StringVar(&f.LocalAuthNamespace, "local-auth-namespace", "", "With --resources cluster and encryption: the namespace of node 0's assisted-service, whose "+resources.LocalAuthSecretName+" Secret (its token key) is carried so that cluster 0 accepts node 0's tokens (default: the only such Secret in any namespace)")
	fs.StringVar(&f.ManifestsDir, "manifests-dir", "", "Store the agent-based installer's manifest files of this directory (e.g. /etc/assisted/manifests) as the resources layer")
	fs.StringArrayVar(&f.Recipients, "recipient", nil, "Encrypt to this age public key (age1...); repeatable")
	fs.StringArrayVar(&f.RecipientFile, "recipients-file", nil, "Encrypt to the age public keys in this file (one per line); repeatable")
	fs.BoolVar(&f.NoEncryption, "no-encryption", false, "Write plaintext layers (the bundle holds secrets)")
	fs.StringVar(&f.SpoolDir, "spool-dir", defaultSpoolDir(), "Where an encrypted push to a registry keeps the files layer's ciphertext until the push succeeds, so that a rerun of an interrupted push resumes instead of starting over; emptied by a successful push. It takes about the size of --data-dir: on a live ISO the home directory is in RAM, give a disk (or --no-spool). Default: on, in the user's cache directory")
	fs.BoolVar(&f.NoSpool, "no-spool", false, "Stream to the registry without the spool: nothing is written to disk, and an interrupted push starts over")
	f.Postgres.AddFlags(fs, "source (node 0)")
	f.DBTables.AddFlags(fs)
	f.Registry.AddFlags(fs)
	f.Output.AddFlags(fs)
	f.Terminal.AddFlags(fs)
}

// validate checks the group's flags, alone and together, before any I/O. Its
// errors are usage errors (exit 2); complete makes the same checks again.
func (f *bundleFlags) validate() error {
	if err := f.Output.Validate(); err != nil {
		return err
	}
	if _, err := oci.ParseReference(f.To); err != nil {
		return err
	}
	if err := f.Postgres.Validate(); err != nil {
		return err
	}
	switch {
	case f.NoEncryption && len(f.Recipients)+len(f.RecipientFile) > 0:
		return errors.New("--no-encryption conflicts with --recipient/--recipients-file")
	case !f.NoSpool && f.SpoolDir == "" && f.refRemote():
		return errors.New("--spool-dir is empty: give a directory, or --no-spool")
	case f.Resources != resourcesNone && f.Resources != resourcesCluster:
		return fmt.Errorf("--resources %q: want none or cluster", f.Resources)
	case f.Resources == resourcesCluster && f.ManifestsDir != "":
		return errors.New("--resources cluster and --manifests-dir both fill the resources layer: give one")
	case f.DataDir == "" && !f.Postgres.IsSet() && f.Resources == resourcesNone && f.ManifestsDir == "":
		return errors.New("nothing to bundle: give --db, --data-dir, --resources cluster or --manifests-dir")
	}
	return nil
}

// refRemote tells whether --to names a registry (false when it does not parse).
func (f *bundleFlags) refRemote() bool {
	ref, err := oci.ParseReference(f.To)
	return err == nil && ref.Remote()
}

// bundleInput is what the group resolves to.
type bundleInput struct {
	ref        oci.Reference
	recipients []age.Recipient
	// create holds Files, Database and, for --manifests-dir, Resources.
	create bundle.CreateOptions
	// sourceDB is the source database's connection string ("" without one).
	sourceDB string
	// spoolDir is where an encrypted push to a registry spools ("" streams).
	spoolDir string
}

// complete validates the group and resolves it; clusterSource builds the
// source of --resources cluster (given what is resolved so far). It touches
// nothing.
func (f *bundleFlags) complete(cmd *cobra.Command, clusterSource func(*bundleInput) (bundle.ResourcesSource, error)) (*bundleInput, error) {
	if err := f.Output.Validate(); err != nil {
		return nil, usageErr(cmd, err)
	}
	ref, err := oci.ParseReference(f.To)
	if err != nil {
		return nil, usageErr(cmd, err)
	}
	if err := f.Postgres.Validate(); err != nil {
		return nil, usageErr(cmd, err)
	}
	in := &bundleInput{ref: ref}
	if in.recipients, err = readRecipients(f.Recipients, f.RecipientFile); err != nil {
		return nil, usageErr(cmd, err)
	}
	if len(in.recipients) > 0 && f.NoEncryption {
		return nil, clierr.Usagef(cmd, "--no-encryption conflicts with --recipient/--recipients-file")
	}
	if !f.NoSpool && ref.Remote() {
		if f.SpoolDir == "" {
			return nil, clierr.Usagef(cmd, "--spool-dir is empty: give a directory, or --no-spool")
		}
		in.spoolDir = f.SpoolDir
	}
	c := &in.create
	if f.DataDir != "" {
		c.Files = &bundle.FilesOptions{Dir: f.DataDir, Exclude: append(append([]string{}, files.DefaultExcludes...), f.Exclude...)}
	}
	if c.Database, err = databaseSource(f.Postgres, f.DBTables, nil); err != nil {
		return nil, clierr.New(err, "", clierr.ExitUsage)
	}
	if f.Postgres.IsSet() {
		in.sourceDB, _ = f.Postgres.ConnString() // databaseSource resolved it
	}
	switch f.Resources {
	case resourcesNone:
	case resourcesCluster:
		if f.ManifestsDir != "" {
			return nil, clierr.Usagef(cmd, "--resources cluster and --manifests-dir both fill the resources layer: give one")
		}
		if c.Resources, err = clusterSource(in); err != nil {
			return nil, err
		}
	default:
		return nil, clierr.Usagef(cmd, "--resources %q: want none or cluster", f.Resources)
	}
	if f.ManifestsDir != "" {
		c.Resources = &resources.DirSource{Dir: f.ManifestsDir}
	}
	if c.Database == nil && c.Files == nil && c.Resources == nil {
		return nil, clierr.Usagef(cmd, "nothing to bundle: give --db, --data-dir, --resources cluster or --manifests-dir")
	}
	return in, nil
}

// defaultSpoolDir is kubectl-assisted/spool in the user's cache directory
// (XDG_CACHE_HOME or ~/.cache on Linux).
func defaultSpoolDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "kubectl-assisted", "spool")
}
