// Command checker stands in for the assisted-service container of the
// operator's Deployment in the job-mode tests: it reads the database the way
// that container does (DB_HOST, DB_PORT, DB_USER, DB_PASS, DB_NAME from the
// postgres Secret, newAssistedServiceDeployment in openshift/assisted-service
// internal/controller/controllers/agentserviceconfig_controller.go) and the
// file storage at /data, and prints what it sees (test/checks) as one JSON
// line. It waits for the database up to two minutes, as the service retries.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kubectl-assisted/kubectl-assisted/test/checks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "checker:", err)
		os.Exit(1)
	}
}

func run() error {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(os.Getenv("DB_USER"), os.Getenv("DB_PASS")),
		Host: net.JoinHostPort(os.Getenv("DB_HOST"), os.Getenv("DB_PORT")), Path: "/" + os.Getenv("DB_NAME"), RawQuery: "sslmode=disable"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var conn *pgx.Conn
	for {
		var err error
		if conn, err = pgx.Connect(ctx, u.String()); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("connect to the database: %w", err)
		case <-time.After(time.Second):
		}
	}
	defer conn.Close(context.Background())
	var seen checks.Seen
	var err error
	if seen.Tables, err = checks.TableDigests(ctx, conn); err != nil {
		return err
	}
	if seen.ClusterKeys, err = checks.ClusterKeys(ctx, conn); err != nil {
		return err
	}
	if seen.Files, err = checks.Tree("/data"); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(seen)
}
