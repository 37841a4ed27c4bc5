package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrOlderTarget is matched (errors.Is) by *OlderTargetError.
var ErrOlderTarget = errors.New("target PostgreSQL is older than the dump's source and refuses its schema")

// OlderTargetError refuses a target server of an older major than the dump's
// source that does not accept the dump's schema (a statement the source's
// server wrote that the older one cannot run). Nothing was written.
type OlderTargetError struct {
	SourceVersion    string
	SourceVersionNum int
	TargetVersion    string
	TargetVersionNum int
	// Err is the target's refusal of the first statement it could not run.
	Err error
}

func (e *OlderTargetError) Error() string {
	return fmt.Sprintf("the target database runs PostgreSQL %s, older than the dump's source (PostgreSQL %s), and does not accept the dump's schema: %v; restore into PostgreSQL %d or newer",
		e.TargetVersion, e.SourceVersion, e.Err, e.SourceVersionNum/10000)
}

func (e *OlderTargetError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrOlderTarget) true.
func (e *OlderTargetError) Is(target error) bool { return target == ErrOlderTarget }

// VersionCheck is what CheckTargetVersion compared.
type VersionCheck struct {
	// SourceVersion and SourceVersionNum are the dump's source server's
	// server_version and server_version_num.
	SourceVersion    string
	SourceVersionNum int
	// TargetVersion and TargetVersionNum are the target server's.
	TargetVersion    string
	TargetVersionNum int
	// Older: the target's major is older than the source's; the dump's schema
	// was tried there and accepted.
	Older bool
}

// CheckTargetVersion compares the major of the server at connString with the
// major of the dump stream's source (read from the stream's header; r is read
// no further when the target is of the same major or newer). A dump restores
// into an older major only if that server accepts the statements the source's
// server wrote: an older target is given the stream's schema (its pre-data
// and post-data statements, no rows) in a transaction that is rolled back,
// reading r to its end. A refused statement gives an *OlderTargetError. The
// target is left as it was in every case.
func CheckTargetVersion(ctx context.Context, connString string, r io.Reader) (*VersionCheck, error) {
	sr := newStreamReader(r)
	if err := sr.readHeader(); err != nil {
		return nil, err
	}
	conn, err := connect(ctx, connString, "target")
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	vc := &VersionCheck{SourceVersion: sr.header.ServerVersion, SourceVersionNum: sr.header.ServerVersionNum}
	if vc.TargetVersion, vc.TargetVersionNum, err = serverVersion(ctx, conn); err != nil {
		return nil, err
	}
	if vc.TargetVersionNum/10000 >= vc.SourceVersionNum/10000 {
		return vc, nil
	}
	vc.Older = true

	// Every statement is checked (ErrUnsafeSQL) before any is tried: pre-data
	// here, post-data in finish, with pre-data's tables known to the checker.
	pre, err := sr.readPreData()
	if err != nil {
		return nil, err
	}
	hashes := make([]*tableHash, len(sr.header.Tables))
	for i, t := range sr.header.Tables {
		hashes[i] = t.newHash()
		if _, err := io.Copy(hashes[i], sr.tableData(i+1)); err != nil {
			return nil, fmt.Errorf("table %s.%s: %w", t.Schema, t.Name, err)
		}
	}
	if _, err := sr.finish(hashes); err != nil {
		return nil, err
	}

	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("try the schema on the target: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	// Whatever the target holds is dropped inside this transaction only, so
	// the statements meet an empty database as the restore's would.
	if err := prepareTarget(ctx, tx, true); err != nil {
		return nil, err
	}
	rs := &restorer{conn: conn, tx: tx, sr: sr}
	for _, objs := range [][]object{pre, sr.post} {
		if err := rs.execAll(ctx, objs); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, &OlderTargetError{SourceVersion: vc.SourceVersion, SourceVersionNum: vc.SourceVersionNum,
				TargetVersion: vc.TargetVersion, TargetVersionNum: vc.TargetVersionNum, Err: err}
		}
	}
	return vc, nil
}
