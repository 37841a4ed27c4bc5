package pg

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// readBuffer is the size of a connection's read buffer. pgx reads the
// socket into an 8 KiB buffer, so a dump's COPY TO came in reads of at most
// 8 KiB, a cost a larger buffer more than halves (docs/architecture.md,
// "Measured choices").
const readBuffer = 256 << 10

// bufferedFrontend reads the server's messages through a readBuffer-sized
// buffer, long CopyData messages cut into pieces (copySplitter).
func bufferedFrontend(r io.Reader, w io.Writer) *pgproto3.Frontend {
	return pgproto3.NewFrontend(newCopySplitter(bufio.NewReaderSize(r, readBuffer)), w)
}

// sessionSettings make COPY text output byte-identical on every server and
// every run: values are written and re-read in one fixed representation (ISO
// dates in UTC, shortest-exact floats, hex bytea, standard strings), and every
// name that the server prints from its catalogs is schema-qualified
// (search_path is empty). Dump and Restore use the same list, so a table
// re-read after loading hashes to what the dump recorded.
var sessionSettings = [][2]string{
	{"client_encoding", "UTF8"},
	{"DateStyle", "ISO, MDY"},
	{"IntervalStyle", "postgres"},
	{"TimeZone", "UTC"},
	{"extra_float_digits", "3"},
	{"standard_conforming_strings", "on"},
	{"bytea_output", "hex"},
	{"xmloption", "content"},
	{"search_path", ""},
	{"row_security", "off"},
	{"statement_timeout", "0"},
	{"lock_timeout", "0"},
	{"idle_in_transaction_session_timeout", "0"},
	{"check_function_bodies", "off"},
	{"client_min_messages", "warning"},
}

// connect opens one connection with the fixed session settings. Errors never
// carry the password: pgx redacts it from parse errors and connect errors name
// only host, user and database.
func connect(ctx context.Context, connString, what string) (*pgx.Conn, error) {
	cfg, err := ParseConnString(connString)
	if err != nil {
		return nil, fmt.Errorf("%s database: %w", what, err)
	}
	for _, s := range sessionSettings {
		cfg.RuntimeParams[s[0]] = s[1]
	}
	// search_path="" is not sent as a startup parameter by every server
	// version the same way; set it explicitly after connecting too.
	delete(cfg.RuntimeParams, "search_path")
	cfg.BuildFrontend = bufferedFrontend
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s database: %w", what, err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_catalog.set_config('search_path', '', false)"); err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("%s database: set search_path: %w", what, err)
	}
	return conn, nil
}

// serverVersion reads server_version and server_version_num.
func serverVersion(ctx context.Context, conn *pgx.Conn) (string, int, error) {
	var v string
	var n int
	err := conn.QueryRow(ctx, "SELECT pg_catalog.current_setting('server_version'), pg_catalog.current_setting('server_version_num')::int").Scan(&v, &n)
	if err != nil {
		return "", 0, fmt.Errorf("read server version: %w", err)
	}
	return v, n, nil
}

// ParseConnString parses a connection string (URL or key=value, with the
// PG* environment variables filling in what it leaves out) as every
// connection this project opens does. Its errors never carry the password.
func ParseConnString(connString string) (*pgx.ConnConfig, error) {
	return pgx.ParseConfig(connString)
}
