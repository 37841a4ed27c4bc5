package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/oci"
)

// A spool makes an interrupted push resumable. Age encryption is randomized,
// so producing a layer again gives other bytes, and the blobs the registry
// already took (or the part of one it took) are worth nothing to a rerun.
// With a spool, an encrypted layer pushed to a registry is written to a file
// in the spool directory while it is uploaded from that file; a layer whose
// inputs a rerun can recognise (the files layer: the tree's Fingerprint) is
// recorded with its digest, and a rerun with unchanged inputs reuses it: it is
// not produced again, the registry is asked whether it has it (then nothing is
// sent), else the rerun resumes the upload session where the registry stands,
// or uploads the spooled file in a new session. The spool holds ciphertext
// only; an unencrypted push spools nothing but still records the digest of a
// recognisable layer, so a rerun skips it when the registry has it. Entries
// are removed after a successful push, and pruned after spoolMaxAge.

const (
	spoolVersion = 2                  // 2: the files layer in parts
	spoolMaxAge  = 7 * 24 * time.Hour // distribution's default upload purge age
	spoolTempAge = time.Hour          // a blob without a record: its run was killed
)

// SpoolOptions configure the spool of Create.
type SpoolOptions struct {
	// Dir holds spooled blobs and their records; empty disables the spool
	// (an encrypted push then streams from memory and cannot resume).
	Dir string
}

// SpoolReport says what the spool did for a push.
type SpoolReport struct {
	Dir string `json:"dir,omitempty"`
	// Reused are layers taken from an earlier run, not produced again.
	Reused []SpoolReuse `json:"reused,omitempty"`
	// Note explains a layer the spool could not serve (no space, busy).
	Notes []string `json:"notes,omitempty"`
}

// SpoolReuse is one layer taken from the spool.
type SpoolReuse struct {
	Kind LayerKind `json:"kind"`
	// How: "present" (the registry had it), "resumed" (an upload session
	// of the earlier run was continued) or "uploaded" (sent from the spool
	// file in a new session).
	How string `json:"how"`
	// SentBytes are the bytes sent for it in this run.
	SentBytes int64 `json:"sentBytes"`
}

// spoolEntry records a layer produced completely into the spool.
type spoolEntry struct {
	Version int       `json:"version"`
	Kind    LayerKind `json:"kind"`
	// Source is what the layer was made from (the data directory), so that
	// a successful push can drop the records of earlier attempts on it.
	Source string `json:"source"`
	// Parts are the layer's blobs, in order (one for a layer in one part).
	Parts      []spoolPart `json:"parts"`
	PlainBytes int64       `json:"plainBytes"`
	// Blob is true when the ciphertext is in the spool (encrypted layers).
	Blob       bool       `json:"blob"`
	Files      *FilesInfo `json:"files,omitempty"`
	ClusterIDs []string   `json:"clusterIDs,omitempty"`
	Created    time.Time  `json:"created"`
}

// spoolPart is one blob of a spooled layer, with the upload session of an
// interrupted upload to resume.
type spoolPart struct {
	Descriptor ocispec.Descriptor `json:"descriptor"`
	PlainBytes int64              `json:"plainBytes"`
	Session    *oci.UploadSession `json:"session,omitempty"`
}

type spool struct {
	dir     string
	locks   map[string]*os.File
	done    []string // keys to remove after a successful push
	sources map[LayerKind]string
}

// openSpool creates dir (private) and prunes what is stale: records older
// than spoolMaxAge, temp files of runs that ended.
func openSpool(dir string) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool directory: %w", err)
	}
	s := &spool{dir: dir, locks: map[string]*os.File{}, sources: map[LayerKind]string{}}
	s.prune()
	return s, nil
}

func (s *spool) path(key, ext string) string { return filepath.Join(s.dir, key+ext) }

// partPath is the file of part i (from 0) of the layer key names.
func (s *spool) partPath(key string, i int) string {
	return s.path(key, fmt.Sprintf(".%04d.blob", i+1))
}

// prune removes records older than spoolMaxAge with their blobs, and blobs
// without a record older than spoolTempAge (a run killed while producing),
// unless a running push holds their lock.
func (s *spool) prune() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	now := time.Now()
	for _, e := range entries {
		key, ext, ok := strings.Cut(e.Name(), ".")
		if !ok || len(key) != 64 {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		age := now.Sub(info.ModTime())
		stale := ext == "json" && age > spoolMaxAge
		if strings.HasSuffix(ext, "blob") && age > spoolTempAge {
			_, err := os.Stat(s.path(key, ".json"))
			stale = err != nil
		}
		if !stale {
			continue
		}
		if release, ok := s.tryLock(key); ok {
			s.drop(key)
			release(true)
		}
	}
}

// lock takes the key's lock for the rest of the push; false when another
// push holds it (that layer then goes without the spool).
func (s *spool) lock(key string) bool {
	if _, ok := s.locks[key]; ok {
		return true
	}
	f, ok := lockFile(s.path(key, ".lock"))
	if !ok {
		return false
	}
	s.locks[key] = f
	return true
}

func (s *spool) tryLock(key string) (release func(remove bool), ok bool) {
	if _, held := s.locks[key]; held {
		return nil, false
	}
	f, ok := lockFile(s.path(key, ".lock"))
	if !ok {
		return nil, false
	}
	return func(remove bool) {
		if remove {
			_ = os.Remove(f.Name())
		}
		unlockFile(f)
	}, true
}

// release drops the locks; with success, the entries this push used are
// removed first, and so are those of earlier attempts on the same sources
// (made from a tree that changed since): they will not be resumed.
func (s *spool) release(success bool) {
	if success {
		for _, key := range s.done {
			s.drop(key)
		}
		s.dropSuperseded()
	}
	for key, f := range s.locks {
		if success {
			_ = os.Remove(s.path(key, ".lock"))
		}
		unlockFile(f)
	}
	s.locks = map[string]*os.File{}
}

func (s *spool) dropSuperseded() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, de := range entries {
		key, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok || len(key) != 64 {
			continue
		}
		e := s.load(key)
		if e == nil || e.Source == "" || s.sources[e.Kind] != e.Source {
			continue
		}
		if release, ok := s.tryLock(key); ok {
			s.drop(key)
			release(true)
		}
	}
}

// load returns the key's record, nil when there is none or it is unusable.
func (s *spool) load(key string) *spoolEntry {
	b, err := os.ReadFile(s.path(key, ".json"))
	if err != nil {
		return nil
	}
	var e spoolEntry
	if json.Unmarshal(b, &e) != nil || e.Version != spoolVersion || len(e.Parts) == 0 || len(e.Parts) > maxFilesParts {
		return nil
	}
	for _, p := range e.Parts {
		if p.Descriptor.Digest.Validate() != nil {
			return nil
		}
	}
	return &e
}

// save writes the key's record (via a temp file and a rename).
func (s *spool) save(key string, e *spoolEntry) error {
	e.Version = spoolVersion
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp := s.path(key, ".json.new")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path(key, ".json"))
}

func (s *spool) drop(key string) {
	_ = os.Remove(s.path(key, ".json"))
	s.dropBlobs(key)
}

// dropBlobs removes the key's part files, on every core: removing a file
// the push just wrote frees its pages in the page cache, which one file
// after the other is the last of a push's time (docs/architecture.md,
// "Measured choices").
func (s *spool) dropBlobs(key string) {
	names, _ := filepath.Glob(filepath.Join(s.dir, key+".*blob"))
	var wg sync.WaitGroup
	next := make(chan string)
	for range min(len(names), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for n := range next {
				_ = os.Remove(n)
			}
		})
	}
	for _, n := range names {
		next <- n
	}
	close(next)
	wg.Wait()
}

// verifyBlob checks a spooled file against its descriptor: size and digest.
func (s *spool) verifyBlob(path string, desc ocispec.Descriptor, kind LayerKind) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	v, err := newVerifier(f, desc, string(kind))
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, v)
	return err
}

// spoolKey names a layer by everything its bytes depend on: the kind, the
// program and format, the encoder, the recipients, and the inputs.
func spoolKey(parts map[string]any) string {
	b, _ := json.Marshal(parts) // map keys are sorted: a stable encoding
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

var errSpoolBusy = errors.New("another push holds this layer's spool entry")
