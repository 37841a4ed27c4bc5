// Package nodeimage builds, on the user's machine, the ISO (or PXE artifacts)
// that boots new hosts into an installed cluster: it reads the cluster (or a
// saved profile), validates nodes-config.yaml against it before any work,
// keeps the agent auth token, resolves the payload's images and live ISO,
// renders the Ignition config and writes node.<arch>.iso.
package nodeimage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/ignition/v2/config/v3_4"
	"github.com/google/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-assisted/kubectl-assisted/day2/authtoken"
	"github.com/kubectl-assisted/kubectl-assisted/day2/clusterinfo"
	"github.com/kubectl-assisted/kubectl-assisted/day2/ignition"
	"github.com/kubectl-assisted/kubectl-assisted/day2/iso"
	"github.com/kubectl-assisted/kubectl-assisted/day2/nodesconfig"
	"github.com/kubectl-assisted/kubectl-assisted/day2/release"
)

// Options are the resolved inputs of one build.
type Options struct {
	Nodes *nodesconfig.Config
	// Dir receives node.<arch>.iso (or boot-artifacts/ with PXE).
	Dir string
	// BaseISO is a local live ISO to use instead of the payload's.
	BaseISO string
	PXE     bool
	// Checksum adds the sha256 of every artifact to the result (reads them
	// once more).
	Checksum    bool
	Compression iso.Compression

	// Kube and Dynamic reach the cluster; both nil means offline from Profile.
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Profile *clusterinfo.Info
	// SaveProfile writes the cluster profile there (online only).
	SaveProfile string
	// Registry configures pulls from the payload (pull secret and mirrors are
	// filled from the cluster).
	Registry release.Options

	Now func() time.Time
	// Progress gets one line per step; Warn gets warnings. Both may be nil.
	Progress func(format string, args ...any)
	Warn     func(format string, args ...any)
}

// Result describes what was built; its JSON form is the command's -o output.
type Result struct {
	Cluster         ClusterRef     `json:"cluster"`
	Architecture    string         `json:"architecture"`
	FIPS            bool           `json:"fips"`
	Artifacts       []iso.Artifact `json:"artifacts"`
	TokenExpiresAt  time.Time      `json:"tokenExpiresAt"`
	TokenReused     bool           `json:"tokenReused"`
	ReleaseImage    string         `json:"releaseImage"`
	BaseISO         string         `json:"baseISO"`
	KernelArguments string         `json:"kernelArguments,omitempty"`
	Hosts           int            `json:"hosts"`
	Warnings        []string       `json:"warnings,omitempty"`
}

// ClusterRef identifies the cluster the ISO joins.
type ClusterRef struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Platform string `json:"platform"`
}

// ValidationError holds every problem found before any work started.
type ValidationError struct{ nodesconfig.Problems }

// Unwrap lets errors.As find the Problems.
func (e *ValidationError) Unwrap() error { return e.Problems }

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

func (o *Options) warn(res *Result, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	res.Warnings = append(res.Warnings, msg)
	if o.Warn != nil {
		o.Warn("%s", msg)
	}
}

// ReadCluster reads the cluster (or returns the profile).
func (o *Options) ReadCluster(ctx context.Context) (*clusterinfo.Info, error) {
	if o.Kube == nil {
		if o.Profile == nil {
			return nil, errors.New("no cluster access and no cluster profile")
		}
		return o.Profile, nil
	}
	arch := ""
	if o.Nodes != nil && o.Nodes.CPUArchitecture != "" {
		arch = nodesconfig.RPMArch(o.Nodes.CPUArchitecture)
	}
	r := &clusterinfo.Reader{Kube: o.Kube, Dynamic: o.Dynamic, Arch: arch, Now: o.Now}
	return r.Read(ctx)
}

// Validate checks nodes-config against itself and the cluster, and the
// platform, reporting every problem at once.
func Validate(nodes *nodesconfig.Config, info *clusterinfo.Info) error {
	var p nodesconfig.Problems
	if err := info.ValidatePlatform(); err != nil {
		p = append(p, err.Error())
	}
	collect := func(err error) {
		var more nodesconfig.Problems
		if errors.As(err, &more) {
			p = append(p, more...)
		} else if err != nil {
			p = append(p, err.Error())
		}
	}
	collect(nodes.Validate())
	cl := nodesconfig.Cluster{Architecture: info.Architecture, MultiArch: info.MultiArch}
	for _, n := range info.Nodes {
		cl.Nodes = append(cl.Nodes, nodesconfig.ExistingNode{Name: n.Name, Addresses: n.Addresses})
	}
	collect(nodes.ValidateCluster(cl))
	if len(p) > 0 {
		return &ValidationError{p}
	}
	return nil
}

// Create builds the artifacts.
func Create(ctx context.Context, o Options) (*Result, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	o.progress("Gathering information from the cluster")
	info, err := o.ReadCluster(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Cluster:      ClusterRef{ID: info.ClusterID, Name: info.ClusterName, Version: info.Version, Platform: info.Platform},
		ReleaseImage: info.ReleaseImage,
		FIPS:         info.FIPS,
		Hosts:        len(o.Nodes.Hosts),
	}
	for _, w := range info.Warnings {
		o.warn(res, "%s", w)
	}
	if err := Validate(o.Nodes, info); err != nil {
		return nil, err
	}
	profile, err := ignition.ProfileFor(info.Version)
	if err != nil {
		return nil, err
	}
	arch := o.Nodes.Architecture(nodesconfig.Cluster{Architecture: info.Architecture})
	res.Architecture = arch
	if o.BaseISO != "" {
		// A bad base ISO fails before the token is touched or anything pulled.
		if err := iso.CheckFile(o.BaseISO, iso.Customization{Ignition: []byte("{}"), KargsAppend: fipsArgs(info.FIPS)}); err != nil {
			return nil, fmt.Errorf("base ISO %s: %w", o.BaseISO, err)
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	// The copy of a local base ISO overlaps with the token, payload and
	// ignition work below.
	var pending *pendingISO
	if o.BaseISO != "" && !o.PXE {
		if pending, err = o.startISO(arch, nil, res); err != nil {
			return nil, err
		}
		defer pending.abortUnlessFinished()
	}

	o.progress("Preparing the agent authentication token")
	infraEnvID := uuid.NewString()
	tok, err := o.token(ctx, info, profile.Tokens, infraEnvID, now(), res)
	if err != nil {
		return nil, err
	}
	res.TokenExpiresAt, res.TokenReused = tok.ExpiresAt, tok.Reused
	if o.SaveProfile != "" {
		info.AuthToken = &clusterinfo.AuthToken{Token: tok.Agent, PublicKey: tok.PublicKey, ExpiresAt: tok.ExpiresAt}
		if tok.Kind == authtoken.KindPerScheme {
			info.AuthToken.UserToken, info.AuthToken.WatcherToken = tok.User, tok.Watcher
		}
		if err := info.SaveProfile(o.SaveProfile); err != nil {
			return nil, fmt.Errorf("save cluster profile: %w", err)
		}
	}

	o.progress("Reading the release payload %s", info.ReleaseImage)
	ro := o.Registry
	ro.PullSecret = []byte(info.PullSecret)
	ro.Mirrors = info.ImageDigestSources
	client, err := release.New(ro)
	if err != nil {
		return nil, err
	}
	client.Log = func(format string, args ...any) { o.warn(res, format, args...) }
	payload, err := client.ReadPayload(ctx, info.ReleaseImage, arch)
	if err != nil {
		return nil, err
	}
	if pending == nil && !o.PXE {
		src, err := o.openBase(ctx, client, payload, arch, res)
		if err != nil {
			return nil, err
		}
		if pending, err = o.startISO(arch, src, res); err != nil {
			src.Close()
			return nil, err
		}
		defer pending.abortUnlessFinished()
	}

	o.progress("Rendering the ISO ignition")
	dbPass, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	ign, err := ignition.Marshal(ignition.Input{Cluster: info, Nodes: o.Nodes, Arch: arch, Payload: payload, Profile: profile, Token: tok, InfraEnvID: infraEnvID, DBPassword: dbPass})
	if err != nil {
		return nil, err
	}
	if _, rpt, err := v3_4.Parse(ign); err != nil || rpt.IsFatal() {
		return nil, fmt.Errorf("rendered ignition does not validate (a bug): %v %s", err, rpt.String())
	}
	cust := iso.Customization{Ignition: ign, KargsAppend: fipsArgs(info.FIPS), Compression: o.Compression}
	if o.PXE {
		err = o.writePXE(ctx, client, payload, arch, cust, res)
	} else {
		err = o.finishISO(pending, cust, res)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func fipsArgs(fips bool) []string {
	if fips {
		return []string{"fips=1"}
	}
	return nil
}

func (o *Options) token(ctx context.Context, info *clusterinfo.Info, kind authtoken.Kind, infraEnvID string, now time.Time, res *Result) (*authtoken.Set, error) {
	if o.Kube != nil {
		return authtoken.Ensure(ctx, o.Kube, kind, infraEnvID, now)
	}
	if t := info.AuthToken; t != nil {
		if tok, err := authtoken.Load(kind, t.Token, t.UserToken, t.WatcherToken, t.PublicKey); err == nil && tok.Usable(now) {
			tok.Reused = true
			return tok, nil
		}
	}
	o.warn(res, "offline build: the profile holds no token valid for more than 24h, so a new one was minted; it is not stored in the cluster, so `add-nodes monitor` cannot read it from %s/%s", authtoken.Namespace, authtoken.SecretName)
	return authtoken.Mint(kind, infraEnvID, now)
}

// openBase returns the base ISO stream: the local file or the payload's.
func (o *Options) openBase(ctx context.Context, client *release.Client, p *release.Payload, arch string, res *Result) (io.ReadCloser, error) {
	if o.BaseISO != "" {
		res.BaseISO = o.BaseISO
		return os.Open(o.BaseISO)
	}
	o.progress("Pulling the base ISO from machine-os-images")
	b, err := client.OpenBaseISO(ctx, p, arch)
	if err != nil {
		return nil, err
	}
	res.BaseISO = b.Ref
	return b, nil
}

// pendingISO is the node ISO being copied from its base.
type pendingISO struct {
	copy     *iso.Copy
	src      io.Closer
	path     string
	finished bool
}

// startISO starts copying the base ISO (src, or the local --base-iso when nil).
func (o *Options) startISO(arch string, src io.ReadCloser, res *Result) (*pendingISO, error) {
	if src == nil {
		f, err := os.Open(o.BaseISO)
		if err != nil {
			return nil, err
		}
		res.BaseISO = o.BaseISO
		src = f
	}
	o.progress("Copying the base ISO")
	dst := filepath.Join(o.Dir, fmt.Sprintf("node.%s.iso", arch))
	c, err := iso.StartCopy(dst, src)
	if err != nil {
		src.Close()
		return nil, err
	}
	return &pendingISO{copy: c, src: src, path: dst}, nil
}

func (p *pendingISO) abortUnlessFinished() {
	if !p.finished {
		p.copy.Abort()
		p.src.Close()
	}
}

func (o *Options) finishISO(p *pendingISO, cust iso.Customization, res *Result) error {
	o.progress("Assembling the ISO image")
	p.finished = true
	w, err := p.copy.Finish(cust)
	p.src.Close()
	if err != nil {
		return err
	}
	if w.Plan.ReplacedConfig {
		o.warn(res, "the base ISO already embedded an Ignition config; it was replaced")
	}
	res.KernelArguments = w.Plan.Kargs
	a := iso.Artifact{Kind: "iso", Path: p.path, Size: w.Size}
	if o.Checksum {
		if a.SHA256, err = iso.FileSHA256(p.path); err != nil {
			return err
		}
	}
	res.Artifacts = append(res.Artifacts, a)
	return nil
}

func (o *Options) writePXE(ctx context.Context, client *release.Client, p *release.Payload, arch string, cust iso.Customization, res *Result) error {
	isoPath := o.BaseISO
	if isoPath == "" {
		src, err := o.openBase(ctx, client, p, arch, res)
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(o.Dir, ".base-*.iso")
		if err != nil {
			src.Close()
			return err
		}
		defer os.Remove(tmp.Name())
		_, err = io.Copy(tmp, src)
		src.Close()
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("download base ISO: %w", err)
		}
		isoPath = tmp.Name()
	} else {
		res.BaseISO = o.BaseISO
	}
	o.progress("Assembling the PXE files")
	pr, err := iso.WritePXE(isoPath, iso.PXEOptions{
		Dir: filepath.Join(o.Dir, "boot-artifacts"), Prefix: "node", Arch: arch,
		BaseURL: o.Nodes.BootArtifactsBaseURL, Checksum: o.Checksum, Customization: cust,
	})
	if err != nil {
		return err
	}
	res.Artifacts = pr.Artifacts
	res.KernelArguments = pr.Kargs
	return nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
