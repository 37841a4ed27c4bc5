package migrate

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pgsource"
)

// PostgresDB is DB through pgx.
type PostgresDB struct{}

// otherClients counts the client sessions on the current database but ours.
const otherClients = `FROM pg_stat_activity
	WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`

// OtherSessions implements DB.
func (PostgresDB) OtherSessions(ctx context.Context, dsn string) (int, string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close(context.Background())
	var n int
	var who *string
	err = conn.QueryRow(ctx, `SELECT count(*), string_agg(DISTINCT coalesce(nullif(application_name, ''), 'client') || '@' || coalesce(host(client_addr), 'local'), ', ') `+otherClients).Scan(&n, &who)
	if err != nil {
		return 0, "", err
	}
	if who == nil {
		return n, "", nil
	}
	return n, *who, nil
}

// Watermark implements DB: the WAL position just before a live dump.
func (PostgresDB) Watermark(ctx context.Context, dsn string) (*Watermark, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	w := &Watermark{}
	err = conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, now(), (SELECT count(*) `+otherClients+`)`).Scan(&w.WALLSN, &w.Time, &w.Sessions)
	if err != nil {
		return nil, err
	}
	w.Time = w.Time.UTC()
	return w, nil
}

// ClusterIDs implements DB.
func (PostgresDB) ClusterIDs(ctx context.Context, dsn string) ([]string, error) {
	return pgsource.LiveClusterIDs(ctx, dsn, "public")
}

// ServerVersion implements DB.
func (PostgresDB) ServerVersion(ctx context.Context, dsn string) (string, int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(context.Background())
	var v string
	var n int
	err = conn.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('server_version_num')::int`).Scan(&v, &n)
	return v, n, err
}
