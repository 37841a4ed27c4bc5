package pg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DefaultExcludeTables are the assisted-service tables that a bundle leaves out
// by default: release_images is a cache that assisted-service reloads at start.
var DefaultExcludeTables = []string{"release_images"}

// DumpOptions choose what Dump reads.
type DumpOptions struct {
	// Schemas to dump; empty means every user schema (not pg_catalog,
	// information_schema, pg_toast, temporary schemas or extension-owned schemas).
	Schemas []string
	// IncludeTables, when set, dumps only these tables (schema, data and their
	// indexes, constraints and owned sequences). Names are "table" or
	// "schema.table"; shell patterns (path.Match) are allowed.
	IncludeTables []string
	// ExcludeTables leaves these tables out entirely (schema and data); same
	// name syntax as IncludeTables.
	ExcludeTables []string
	// ExcludeTableData keeps these tables' definitions but dumps no rows.
	ExcludeTableData []string
	// Deferrable waits for a snapshot that no concurrent serializable
	// transaction can contradict (SERIALIZABLE READ ONLY DEFERRABLE).
	Deferrable bool
	// Progress, when set, is called as the dump goes (from the calling goroutine).
	Progress func(ProgressEvent)
	// Logger receives debug and warning records; nil discards them.
	Logger *slog.Logger
	// ChunkSize is the largest data member in the stream (default 1 MiB): the
	// only per-table buffer the dump holds.
	ChunkSize int
	// TextCopy dumps every table in COPY text format, even those whose
	// columns COPY can move in binary (docs/bundle-format.md, "The dump stream").
	TextCopy bool
}

// RestoreOptions choose how Restore loads a stream.
type RestoreOptions struct {
	// Replace drops the target's existing objects inside the restore's final
	// transaction instead of refusing a non-empty target: they stay as they
	// were until the new ones are complete.
	Replace bool
	// BeforeCommit runs inside the restore's final transaction after every
	// table is loaded and verified, the indexes and constraints exist and the
	// objects are in their schemas; an error rolls everything back.
	BeforeCommit func(ctx context.Context, tx pgx.Tx) error
	// SingleTransaction restores on one connection in one transaction that
	// does everything (no staging schema, nothing committed before the end),
	// as every restore did before streams of format 1.2. A caller that rolls
	// back on purpose (a dry run: BeforeCommit returns an error) sets it, so
	// that nothing at all is written. Streams older than 1.2, or that cannot
	// be staged (see Restore), are restored this way anyway.
	SingleTransaction bool
	// Workers is how many connections build keys and indexes, re-read
	// tables and gather statistics while the rows load (staged restore); 0
	// means 2.
	Workers int
	// Loaders is how many connections load tables at once (staged restore);
	// 0 means 2. The stream holds one table after the other: to start the
	// next table while a loader is still busy, the restore reads ahead and
	// keeps what it read, compressed, in an unlinked file in SpoolDir
	// (memory stays bounded; the disk holds at most what was read ahead).
	Loaders int
	// SpoolDir is where that file goes; "" is the system's temporary
	// directory. When it cannot be created, the restore reads no further
	// ahead than its memory bound.
	SpoolDir string
	// DeferAnalyze leaves the statistics to the caller when they could only
	// be gathered after the commit (a one-transaction restore): Restore then
	// returns without ANALYZE and Summary.Analyzed is false, and the caller
	// runs Analyze (beside other work). A staged restore gathers them before
	// its commit, overlapped with loading, and reports Summary.Analyzed.
	DeferAnalyze bool
	// Progress, when set, is called as the restore goes.
	Progress func(ProgressEvent)
	// Logger receives debug and warning records; nil discards them.
	Logger *slog.Logger
	// Readback chooses when every loaded table is re-read inside the
	// transaction (COPY TO) and its checksum compared with the dump's; the
	// streamed bytes' checksums and the server's row counts are always checked.
	Readback Readback
	// SkipAnalyze runs no ANALYZE at all; the caller runs Analyze itself.
	SkipAnalyze bool
	// MaintenanceWorkMem is set (SET LOCAL) for index builds; default "256MB".
	MaintenanceWorkMem string
	// ToastCompression is how the restore compresses long values
	// (default_toast_compression of its sessions): "lz4" or "pglz"; "" (auto)
	// means lz4 when the target supports it (PostgreSQL 14 on, built with
	// lz4) and leaves its default_toast_compression at the built-in default
	// (pglz), else the target's own setting; "default" always keeps the
	// target's. The values are the same whichever compresses them; lz4
	// writes them several times faster.
	ToastCompression string
}

// Readback is when Restore re-reads loaded tables to compare checksums.
type Readback int

const (
	// ReadbackAuto re-reads when the target's major version differs from the
	// source's: that is where a type's text output could differ from what the
	// dump wrote. On the same major, the same input and output functions run
	// on both sides under the same session settings, so the streamed checksum
	// already covers the stored values.
	ReadbackAuto Readback = iota
	// ReadbackAlways re-reads every table (about a fifth more restore time).
	ReadbackAlways
	// ReadbackNever never re-reads.
	ReadbackNever
)

// Phase names where a dump or restore is.
type Phase string

// Phases reported in ProgressEvent.
const (
	PhaseSchema   Phase = "schema"    // reading or creating table definitions
	PhaseData     Phase = "data"      // copying rows
	PhaseVerify   Phase = "verify"    // re-reading a loaded table to compare checksums
	PhasePostData Phase = "post-data" // constraints, indexes, sequence values (staged: the rows are in, indexes still building)
	PhaseCommit   Phase = "commit"    // the final transaction: BeforeCommit hook and COMMIT
	PhaseAnalyze  Phase = "analyze"   // ANALYZE (after commit; staged: before the final transaction, indexes built)
	PhaseDone     Phase = "done"
)

// ProgressEvent tells where a dump or restore is.
type ProgressEvent struct {
	Phase Phase
	// Table is "schema.name" during PhaseData and PhaseVerify.
	Table string
	// TableRows and TableBytes are the current table's progress so far.
	TableRows, TableBytes int64
	// TablesDone of TablesTotal tables are complete.
	TablesDone, TablesTotal int
	// Bytes is the data moved so far, all tables.
	Bytes int64
}

// Summary describes a dump stream: where it came from and what it holds.
type Summary struct {
	// ServerVersion is the source server's version (server_version).
	ServerVersion string `json:"serverVersion"`
	// LastMigration is the greatest id of the `migrations` table (assisted-service's
	// gormigrate bookkeeping), "" if there is none.
	LastMigration string `json:"lastMigration,omitempty"`
	// Tables in stream order, with their row counts and checksums.
	Tables []TableSummary `json:"tables"`
	// Bytes is the size of the whole stream.
	Bytes int64 `json:"bytes"`
	// Analyzed: Restore gathered the restored tables' statistics (ANALYZE)
	// before it returned.
	Analyzed bool `json:"-"`
}

// TableSummary is one table's row count and content checksum.
type TableSummary struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
	// Checksum is "<algorithm>:<hex>" of the table's COPY data in the stream:
	// "xxh3-128:" (format 3.0 on) or "sha256:" (before).
	Checksum string `json:"checksum"`
	// DataBytes is the size of the table's COPY text data.
	DataBytes int64 `json:"dataBytes"`
}

// QualifiedName is "schema.name" (unquoted; for messages and matching).
func (t TableSummary) QualifiedName() string { return t.Schema + "." + t.Name }

var (
	// ErrTargetNotEmpty is returned (wrapped in *TargetNotEmptyError) when Restore
	// finds objects in the target database and Replace is not set.
	ErrTargetNotEmpty = errors.New("target database is not empty")
	// ErrCorruptStream means the stream is truncated, malformed or not a dump.
	ErrCorruptStream = errors.New("corrupt database stream")
	// ErrUnsupportedFormat means the stream's major format version is newer
	// than this code reads.
	ErrUnsupportedFormat = errors.New("unsupported database stream format")
	// ErrChecksumMismatch means loaded or streamed data differs from what the
	// dump recorded.
	ErrChecksumMismatch = errors.New("database checksum mismatch")
	// ErrUnsupportedObject means the source schema holds objects that Dump cannot
	// reproduce (views, functions, triggers, ...); it refuses rather than lose them.
	ErrUnsupportedObject = errors.New("unsupported database object")
)

// TargetNotEmptyError lists what Restore found in the target database.
type TargetNotEmptyError struct {
	// Objects are "kind schema.name" strings, at most a few dozen.
	Objects []string
	// More counts objects found beyond Objects.
	More int
}

func (e *TargetNotEmptyError) Error() string {
	list := strings.Join(e.Objects, ", ")
	if e.More > 0 {
		list += fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("%s: it holds %s; restore only into an empty database, or pass --replace to drop them in the same transaction", ErrTargetNotEmpty, list)
}

// Is makes errors.Is(err, ErrTargetNotEmpty) true.
func (e *TargetNotEmptyError) Is(target error) bool { return target == ErrTargetNotEmpty }

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
