package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	crs "github.com/kubectl-assisted/kubectl-assisted/restore/resources"
	"github.com/kubectl-assisted/kubectl-assisted/test/harness"
)

// stopAfter is a slog handler that cancels the restore after n objects: the
// nearest a library test gets to killing it mid-way (the SIGKILL test of the
// whole command comes with the CLI).
type stopAfter struct {
	n      int64
	seen   atomic.Int64
	cancel context.CancelFunc
}

func (s *stopAfter) Enabled(context.Context, slog.Level) bool { return true }
func (s *stopAfter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "restore object" && s.seen.Add(1) == s.n {
		s.cancel()
	}
	return nil
}
func (s *stopAfter) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *stopAfter) WithGroup(string) slog.Handler      { return s }

// endState is what a restore leaves in ns, independent of the namespace name
// and UIDs: each object's labels, annotations and content, and its owners by
// name with whether the UID is the owner's current one.
func endState(t *testing.T, k *harness.Kube, ns, id string) map[string]string {
	t.Helper()
	objs := restoredObjects(t, k.Dynamic(t), ns, id)
	out := map[string]string{}
	for name, o := range objs {
		var owners []string
		for _, ref := range o.GetOwnerReferences() {
			owner := objs[ref.Kind+"/"+ref.Name]
			owners = append(owners, fmt.Sprintf("%s/%s current=%v", ref.Kind, ref.Name, owner != nil && owner.GetUID() == ref.UID))
		}
		c := o.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata")
		unstructured.RemoveNestedField(c.Object, "status")
		body, _ := json.Marshal(map[string]any{"labels": o.GetLabels(), "annotations": o.GetAnnotations(), "owners": owners, "content": c.Object})
		out[name] = strings.ReplaceAll(string(body), ns, "NS")
	}
	return out
}

func TestRestoreResources_StoppedAnywhereThenRerunConverges(t *testing.T) {
	k := harness.SharedKube(t)
	client := restoreClient(t, k.Config)
	id := "resume-" + k.Namespace(t) // one ClusterImageSet shared by all runs, like one bundle
	opts := func(ns string) crs.Options {
		return crs.Options{NamespaceMapping: mapping(ns), BundleDigest: testDigest, Existing: crs.ExistingFail}
	}

	refNS := k.Namespace(t)
	if _, err := crs.Restore(context.Background(), client, node0Export(t, id), opts(refNS)); err != nil {
		t.Fatal(err)
	}
	want := endState(t, k, refNS, id)
	if len(want) != 10 {
		t.Fatalf("reference restore left %d objects", len(want))
	}

	for _, stop := range []int64{1, 3, 5, 7, 9, 10} {
		t.Run(fmt.Sprintf("stopped after %d objects", stop), func(t *testing.T) {
			ns := k.Namespace(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := opts(ns)
			o.Logger = slog.New(&stopAfter{n: stop, cancel: cancel})
			_, err := crs.Restore(ctx, client, node0Export(t, id), o)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped run: err = %v, want context.Canceled", err)
			}
			// The rerun uses --existing=fail: its own objects are not conflicts.
			rep, err := crs.Restore(context.Background(), client, node0Export(t, id), opts(ns))
			if err != nil {
				t.Fatalf("rerun: %v", err)
			}
			if rep.Failed() {
				t.Fatalf("rerun report: %v", rep.Counts)
			}
			if got := endState(t, k, ns, id); !reflect.DeepEqual(got, want) {
				for name := range want {
					if got[name] != want[name] {
						t.Errorf("%s differs after stop+rerun:\n got %s\nwant %s", name, got[name], want[name])
					}
				}
				if len(got) != len(want) {
					t.Errorf("objects: got %v", keys(restoredObjects(t, k.Dynamic(t), ns, id)))
				}
			}
		})
	}
}
