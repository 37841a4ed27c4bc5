package switchover

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRun(t *testing.T) {
	ns := DefaultNamespace
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns},
		Data: map[string]string{KeyInventoryURL: "http://192.168.111.80:8090", "cluster-id": "c1"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: ns},
		Data: map[string][]byte{KeyToken: []byte("old-token")}}
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctrl-abc", Namespace: ns, Labels: map[string]string{"app": "assisted-installer-controller"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctrl-old", Namespace: ns, Labels: map[string]string{"app": "assisted-installer-controller"}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	cs := fake.NewSimpleClientset(cm, sec, running, done)
	ctx := context.Background()
	o := Options{ServiceURL: "https://assisted-service.apps.c0.example.com", Token: "new-token-value"}

	dry := o
	dry.DryRun = true
	res, err := Run(ctx, cs, dry)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 2 || len(res.RestartedPods) != 0 {
		t.Fatalf("dry run: %+v", res)
	}
	if got, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{}); got.Data[KeyInventoryURL] != "http://192.168.111.80:8090" {
		t.Fatal("dry run changed the ConfigMap")
	}

	res, err = Run(ctx, cs, o)
	if err != nil {
		t.Fatal(err)
	}
	gotCM, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if gotCM.Data[KeyInventoryURL] != o.ServiceURL || gotCM.Data["cluster-id"] != "c1" {
		t.Fatalf("ConfigMap data = %v", gotCM.Data)
	}
	gotSec, _ := cs.CoreV1().Secrets(ns).Get(ctx, SecretName, metav1.GetOptions{})
	if string(gotSec.Data[KeyToken]) != "new-token-value" {
		t.Fatal("token not written")
	}
	if len(res.RestartedPods) != 1 || res.RestartedPods[0] != "ctrl-abc" {
		t.Fatalf("restarted %v, want only the running pod", res.RestartedPods)
	}
	for _, c := range res.Changes {
		if strings.Contains(c.From+c.To, "token-value") || strings.Contains(c.From+c.To, "old-token") {
			t.Fatalf("a token value leaked into the result: %+v", c)
		}
	}

	again, err := Run(ctx, cs, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Changes) != 0 || len(again.RestartedPods) != 0 {
		t.Fatalf("second run not idempotent: %+v", again)
	}
}

func TestRun_Errors(t *testing.T) {
	ctx := context.Background()
	if _, err := Run(ctx, fake.NewSimpleClientset(), Options{ServiceURL: "https://x"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing controller: err = %v", err)
	}
	for _, u := range []string{"", "assisted.example.com", "ftp://x/"} {
		if _, err := Run(ctx, fake.NewSimpleClientset(), Options{ServiceURL: u}); err == nil {
			t.Fatalf("service URL %q accepted", u)
		}
	}
}

func TestRedirector(t *testing.T) {
	target, _ := url.Parse("https://assisted.apps.c0.example.com/base/")
	srv := httptest.NewServer(&Redirector{Target: target})
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Post(srv.URL+"/api/assisted-install/v2/clusters/c1/events?x=1", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if loc := resp.Header.Get("Location"); loc != "https://assisted.apps.c0.example.com/base/api/assisted-install/v2/clusters/c1/events?x=1" {
		t.Fatalf("Location = %s", loc)
	}
}
