package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// AwaitServer connects to the server at connString and returns its
// server_version and server_version_num. For up to wait it retries while the
// server is not there yet or not ready: no one listening, a connection
// closed or timed out, or PostgreSQL's "cannot connect now" (57P03: starting
// up, in recovery, shutting down). Any other error (authentication, no such
// database) returns at once. onRetry, if set, hears each failure that is
// retried.
func AwaitServer(ctx context.Context, connString string, wait time.Duration, onRetry func(error)) (string, int, error) {
	deadline := time.Now().Add(wait)
	delay := 250 * time.Millisecond
	for {
		v, n, err := serverVersionAt(ctx, connString)
		if err == nil {
			return v, n, nil
		}
		if !notReady(err) || time.Now().Add(delay).After(deadline) || ctx.Err() != nil {
			return "", 0, err
		}
		if onRetry != nil {
			onRetry(err)
		}
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func serverVersionAt(ctx context.Context, connString string) (string, int, error) {
	conn, err := connect(ctx, connString, "target")
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	return serverVersion(ctx, conn)
}

// notReady tells a server that is not (yet) accepting connections from one
// that refused this client.
func notReady(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P03" // cannot_connect_now
	}
	var netErr net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ENOENT) || // a Unix socket not there yet
		(errors.As(err, &netErr) && netErr.Timeout())
}

// ErrWrongMajor is matched (errors.Is) by *WrongMajorError.
var ErrWrongMajor = errors.New("target PostgreSQL is not of the major that will run the restored database")

// WrongMajorError refuses a target server of another major than the one
// that will run the restored data directory (restore --database-major):
// PostgreSQL starts only on a data directory of its own major.
type WrongMajorError struct {
	TargetVersion string
	Want          int
}

func (e *WrongMajorError) Error() string {
	return fmt.Sprintf("the target database runs PostgreSQL %s, but PostgreSQL %d will run the restored data (cluster 0's DATABASE_IMAGE): its server would refuse a data directory of another major",
		e.TargetVersion, e.Want)
}

// Is makes errors.Is(err, ErrWrongMajor) true.
func (e *WrongMajorError) Is(target error) bool { return target == ErrWrongMajor }
