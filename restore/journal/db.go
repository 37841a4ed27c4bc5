package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DBSchema and DBTable hold the journals and receipts of restores run without
// a cluster (a database-and-files restore, to read node 0's data elsewhere):
// one row per journal or receipt, named as its ConfigMap would be, with the
// same data. The schema is ours alone; assisted-service never reads it.
const (
	DBSchema = "kubectl_assisted"
	DBTable  = "restore_records"
)

// DB keeps journals and receipts in the target database.
type DB struct {
	// ConnString reaches the target database.
	ConnString string
	tx         pgx.Tx
}

// UseTx makes the store write through tx (the restore transaction, whose
// replace may drop and re-create the schema) until UseTx(nil).
func (d *DB) UseTx(tx pgx.Tx) { d.tx = tx }

// Where names the store for messages.
func (d *DB) Where() string { return "the target database (" + DBSchema + "." + DBTable + ")" }

// with runs f on the transaction in use or on a new connection.
func (d *DB) with(ctx context.Context, f func(q pgx.Tx) error) error {
	if d.tx != nil {
		return f(d.tx)
	}
	conn, err := pgx.Connect(ctx, d.ConnString)
	if err != nil {
		return fmt.Errorf("journal database: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

var tableIdent = pgx.Identifier{DBSchema, DBTable}.Sanitize()

func ensureTable(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{DBSchema}.Sanitize()+`;
CREATE TABLE IF NOT EXISTS `+tableIdent+` (name text PRIMARY KEY, role text NOT NULL, data jsonb NOT NULL)`)
	return err
}

// get reads a row; found is false when the schema, table or row is absent.
func (d *DB) get(ctx context.Context, name string) (map[string]string, bool, error) {
	var data map[string]string
	found := false
	err := d.with(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, tableIdent).Scan(&exists); err != nil || !exists {
			return err
		}
		var raw []byte
		err := tx.QueryRow(ctx, `SELECT data FROM `+tableIdent+` WHERE name = $1`, name).Scan(&raw)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		return json.Unmarshal(raw, &data)
	})
	if err != nil {
		return nil, false, fmt.Errorf("read %s from %s: %w", name, d.Where(), err)
	}
	return data, found, nil
}

// put writes a row (the table is created when absent).
func (d *DB) put(ctx context.Context, name, role string, data map[string]string) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	err = d.with(ctx, func(tx pgx.Tx) error {
		if err := ensureTable(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+tableIdent+` (name, role, data) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET data = EXCLUDED.data, role = EXCLUDED.role`, name, role, raw)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s to %s: %w", name, d.Where(), err)
	}
	return nil
}

func (d *DB) journal(name, digest string, data map[string]string) *Journal {
	return &Journal{db: d, name: name, digest: digest, cm: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}}
}

// lookup reads the journal row of digest: its name, data and whether it exists.
func (d *DB) lookup(ctx context.Context, digest string) (string, map[string]string, bool, error) {
	name, err := JournalName(digest)
	if err != nil {
		return "", nil, false, err
	}
	data, found, err := d.get(ctx, name)
	return name, data, found, err
}

// Peek reads the journal of digest, or an error wrapping ErrNoJournal.
func (d *DB) Peek(ctx context.Context, digest string) (*Journal, error) {
	name, data, found, err := d.lookup(ctx, digest)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w for bundle %s in %s", ErrNoJournal, digest, d.Where())
	}
	return d.journal(name, digest, data), nil
}

// Open reads the journal of digest, creating it when absent; see Open.
func (d *DB) Open(ctx context.Context, digest, fingerprint string) (*Journal, error) {
	name, data, found, err := d.lookup(ctx, digest)
	if err != nil {
		return nil, err
	}
	if !found {
		data = map[string]string{KeyBundleDigest: digest, KeyFingerprint: fingerprint}
		if err := d.put(ctx, name, RoleJournal, data); err != nil {
			return nil, err
		}
	}
	if data[KeyBundleDigest] != digest {
		return nil, fmt.Errorf("journal %s in %s belongs to bundle %q", name, d.Where(), data[KeyBundleDigest])
	}
	if fingerprint != "" && data[KeyFingerprint] != "" && data[KeyFingerprint] != fingerprint {
		return nil, &FingerprintMismatchError{Name: name + " in " + d.Where()}
	}
	return d.journal(name, digest, data), nil
}

// Rewrite writes the whole journal again (after a replace dropped it inside
// the restore transaction).
func (j *Journal) Rewrite(ctx context.Context) error {
	if j.db == nil {
		return nil
	}
	return j.db.put(ctx, j.name, RoleJournal, j.cm.Data)
}

// InDatabase reports whether the journal is kept in the target database.
func (j *Journal) InDatabase() bool { return j.db != nil }

// WriteReceipt writes (or replaces) the receipt row.
func (d *DB) WriteReceipt(ctx context.Context, r Receipt) error {
	name, err := ReceiptName(r.BundleDigest)
	if err != nil {
		return err
	}
	data, err := receiptData(r)
	if err != nil {
		return err
	}
	return d.put(ctx, name, RoleReceipt, data)
}

// ReadReceipt returns the receipt of digest, or an error wrapping ErrNoReceipt.
func (d *DB) ReadReceipt(ctx context.Context, digest string) (Receipt, error) {
	name, err := ReceiptName(digest)
	if err != nil {
		return Receipt{}, err
	}
	data, found, err := d.get(ctx, name)
	if err != nil {
		return Receipt{}, err
	}
	if !found {
		return Receipt{}, fmt.Errorf("%w for bundle %s in %s", ErrNoReceipt, digest, d.Where())
	}
	return parseReceipt(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: DBSchema}, Data: data})
}
