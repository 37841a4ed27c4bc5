package option

import (
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
)

func TestConnStringFromEnv(t *testing.T) {
	t.Setenv("DB_HOST", "127.0.0.1")
	t.Setenv("DB_PORT", "5433")
	t.Setenv("DB_USER", "admin")
	t.Setenv("DB_PASS", "s3cret env'pw")
	t.Setenv("DB_NAME", "installer")
	p := Postgres{FromEnv: true}
	cs, err := p.ConnString()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pg.ParseConnString(cs)
	if err != nil {
		t.Fatalf("pgx cannot parse %q: %v", Redact(cs), err)
	}
	if cfg.Host != "127.0.0.1" || cfg.Port != 5433 || cfg.User != "admin" || cfg.Password != "s3cret env'pw" || cfg.Database != "installer" {
		t.Errorf("config = %s:%d %s %s", cfg.Host, cfg.Port, cfg.User, cfg.Database)
	}
	if strings.Contains(p.Describe(), "s3cret") {
		t.Errorf("Describe() = %q", p.Describe())
	}

	t.Setenv("DB_USER", "")
	if _, err := p.ConnString(); err == nil || !strings.Contains(err.Error(), "the environment lacks DB_USER") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("missing DB_USER: %v", err)
	}
	if err := (&Postgres{FromEnv: true, URL: "postgres://h/d"}).Validate(); err == nil {
		t.Error("--db-from-env with --db was accepted")
	}
}
