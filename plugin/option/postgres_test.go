package option

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-assisted/kubectl-assisted/bundle/pg"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url with password", "postgres://admin:s3cret@db:5432/installer?sslmode=disable", "postgres://admin:xxxxx@db:5432/installer?sslmode=disable"},
		{"url without password", "postgres://admin@db/installer", "postgres://admin@db/installer"},
		{"url with password parameter", "postgresql://db/installer?password=s3cret&sslmode=disable", "postgresql://db/installer?password=xxxxx&sslmode=disable"},
		{"url that does not parse", "postgres://admin:s3cret@db:54x32/%zz", "postgres://xxxxx@db:54x32/%zz"},
		{"dsn", "host=db user=admin password=s3cret dbname=installer", "host=db user=admin password=xxxxx dbname=installer"},
		{"dsn quoted", `host=db password='s3 \'cret' dbname=installer`, "host=db password=xxxxx dbname=installer"},
		{"dsn spaced", "host=db PASSWORD = s3cret", "host=db PASSWORD = xxxxx"},
		{"dsn without password", "host=db dbname=installer", "host=db dbname=installer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			if got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if strings.Contains(got, "s3") {
				t.Errorf("Redact(%q) = %q keeps the password", tt.in, got)
			}
		})
	}
}

func TestConnString(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	abi := write("assisted-service.env", "DEPLOY_TARGET=onprem\nDB_HOST=127.0.0.1\nDB_NAME=installer\nDB_PASS=admin\nDB_PORT=5432\nDB_USER=admin\n")
	odd := write("odd.env", "# comment\n\nexport DB_HOST=\"/tmp\"\nDB_USER='ad min'\nDB_NAME=in'staller\nDB_PASS=p@ss w'rd\\x=y\n")
	missing := write("missing.env", "DB_HOST=h\nDB_PASS=s3cret-in-missing\n")
	bad := write("bad.env", "DB_HOST=h\nthis line holds s3cret-in-bad\n")

	tests := []struct {
		name    string
		opts    Postgres
		want    map[string]string // pgx config fields
		wantErr string
	}{
		{"url", Postgres{URL: "postgres://u:pw@h:5433/d"}, map[string]string{"host": "h", "port": "5433", "user": "u", "password": "pw", "database": "d"}, ""},
		{"abi env file", Postgres{EnvFile: abi}, map[string]string{"host": "127.0.0.1", "port": "5432", "user": "admin", "password": "admin", "database": "installer"}, ""},
		{"quotes and specials", Postgres{EnvFile: odd}, map[string]string{"host": "/tmp", "port": "5432", "user": "ad min", "password": `p@ss w'rd\x=y`, "database": "in'staller"}, ""},
		{"both", Postgres{URL: "postgres://h/d", EnvFile: abi}, nil, "only one"},
		{"neither", Postgres{}, nil, "no database given"},
		{"missing keys", Postgres{EnvFile: missing}, nil, "lacks DB_USER, DB_NAME"},
		{"bad line", Postgres{EnvFile: bad}, nil, "line 2 is not KEY=VALUE"},
		{"no file", Postgres{EnvFile: filepath.Join(dir, "nope.env")}, nil, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := tt.opts.ConnString()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error %q carries a secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := pg.ParseConnString(cs)
			if err != nil {
				t.Fatalf("pgx cannot parse %q: %v", Redact(cs), err)
			}
			got := map[string]string{"host": cfg.Host, "port": itoa(cfg.Port), "user": cfg.User, "password": cfg.Password, "database": cfg.Database}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			red, err := pg.ParseConnString(Redact(cs))
			if err != nil || red.Password != "xxxxx" || red.User != cfg.User || red.Host != cfg.Host {
				t.Errorf("Redact(%q) is not the same connection with the password replaced (%v)", Redact(cs), err)
			}
			if strings.Contains(tt.opts.Describe(), "pw") || strings.Contains(tt.opts.Describe(), "admin:") {
				t.Errorf("Describe() = %q shows the password", tt.opts.Describe())
			}
		})
	}
}

func itoa(p uint16) string {
	s := ""
	for ; p > 0; p /= 10 {
		s = string(rune('0'+p%10)) + s
	}
	return s
}
