// Package checks describes what a restore must carry over, the same way on
// node 0 and on cluster 0: every table of the public schema as a row count
// and a digest of its rows, and a file tree as modes, sizes, digests, times
// and the manifest-origin xattr. The e2e tests compare node 0's with cluster
// 0's; the checker image (test/harness/images/checker) computes cluster 0's
// inside a pod, as assisted-service would see them.
package checks

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// TableDigests is "rows:md5" of every public table's rows as JSON, leaving
// out what a restore changes on purpose: the kube keys, and of infra_envs
// the name (the InfraEnv's) and generated (reset so that cluster 0's image
// service builds the ISO URLs).
func TableDigests(ctx context.Context, conn *pgx.Conn) (map[string]string, error) {
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, tb := range tables {
		drop := "ARRAY['kube_key_name','kube_key_namespace']"
		if tb == "infra_envs" {
			drop = "ARRAY['kube_key_name','kube_key_namespace','name','generated']"
		}
		var d string
		q := fmt.Sprintf(`SELECT count(*)::text || ':' || coalesce(md5(string_agg(j, E'\n' ORDER BY j)), '') FROM (SELECT (to_jsonb(x) - %s)::text AS j FROM public.%s x) s`, drop, pgx.Identifier{tb}.Sanitize())
		if err := conn.QueryRow(ctx, q).Scan(&d); err != nil {
			return nil, fmt.Errorf("%s: %w", tb, err)
		}
		out[tb] = d
	}
	return out, nil
}

// Tree describes a directory: path -> mode, size, content digest, mtime and
// the user.assisted-installer-manifest-source xattr.
func Tree(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		desc := fmt.Sprintf("%v", fi.Mode())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d %x %d", fi.Size(), sha256.Sum256(data), fi.ModTime().Unix())
			buf := make([]byte, 256)
			if n, err := syscall.Getxattr(p, "user.assisted-installer-manifest-source", buf); err == nil {
				desc += " xattr=" + string(buf[:n])
			}
		}
		out[rel] = desc
		return nil
	})
	return out, err
}

// Seen is what the checker image prints: the table digests and the tree of
// /data.
type Seen struct {
	Tables      map[string]string `json:"tables"`
	Files       map[string]string `json:"files"`
	ClusterKeys map[string]string `json:"clusterKeys"`
}

// ClusterKeys is every cluster row's kube key, id -> "namespace/name".
func ClusterKeys(ctx context.Context, conn *pgx.Conn) (map[string]string, error) {
	out := map[string]string{}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('public.clusters') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return out, err
	}
	rows, err := conn.Query(ctx, `SELECT id::text, coalesce(kube_key_namespace, '') || '/' || coalesce(kube_key_name, '') FROM public.clusters`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			return nil, err
		}
		out[id] = key
	}
	return out, rows.Err()
}
