package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestNode0_InstallersUnitsRunOnNode0Only: on node 0 the stand-ins start in
// the installer's order and assisted-service holds its session on the
// database; on another host the pod's condition keeps all of them off.
func TestNode0_InstallersUnitsRunOnNode0Only(t *testing.T) {
	t.Parallel()
	t.Run("node 0", func(t *testing.T) {
		t.Parallel()
		n := StartNode0(t, Node0Options{})
		n.WaitServiceSession(t, 60*time.Second)
		ctx := context.Background()
		c, err := pgx.Connect(ctx, n.URL("admin", "installer"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var v string
		if err := c.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil || !strings.HasPrefix(v, "15.") {
			t.Fatalf("node 0's PostgreSQL %q %v", v, err)
		}
		for _, u := range []string{"assisted-service-pod.service", "assisted-service-db.service", "assisted-service.service"} {
			if got := strings.TrimSpace(n.Systemctl(t, "is-active", u).Stdout); got != "active" {
				t.Errorf("%s is %s", u, got)
			}
		}
	})
	t.Run("another host", func(t *testing.T) {
		t.Parallel()
		n := StartNode0(t, Node0Options{NotNode0: true})
		if got := strings.TrimSpace(n.Systemctl(t, "show", "-p", "ConditionResult", "--value", "assisted-service-pod.service").Stdout); got != "no" {
			t.Fatalf("the pod's condition on another host: %q", got)
		}
		for _, u := range []string{"assisted-service-db.service", "assisted-service.service"} {
			if got := strings.TrimSpace(n.Systemctl(t, "is-active", u).Stdout); got == "active" {
				t.Errorf("%s runs on a host that is not node 0", u)
			}
		}
	})
}
