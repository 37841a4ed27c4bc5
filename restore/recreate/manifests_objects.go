package recreate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ManifestsFromObjects sorts decoded install-manifest objects (a bundle's
// resources layer made from ABI's manifest files) into Manifests, like
// LoadManifests does with the files. The pull secret is the Secret the
// ClusterDeployment's spec.pullSecretRef names, or the only Secret; objects of
// other kinds (mirror ConfigMaps, ...) are ignored.
func ManifestsFromObjects(objs []*unstructured.Unstructured) (*Manifests, error) {
	mf := &Manifests{}
	var secrets []*unstructured.Unstructured
	one := func(slot **unstructured.Unstructured, o *unstructured.Unstructured) error {
		if *slot != nil {
			return fmt.Errorf("the install manifests hold two %s objects (%s and %s): re-creating resources handles one cluster per manifest set", o.GetKind(), (*slot).GetName(), o.GetName())
		}
		*slot = o
		return nil
	}
	for _, src := range objs {
		o := &unstructured.Unstructured{Object: normalizeNumbers(src.DeepCopy().Object).(map[string]any)}
		var err error
		switch o.GetKind() {
		case kindCD:
			err = one(&mf.ClusterDeployment, o)
		case kindACI:
			err = one(&mf.AgentClusterInstall, o)
		case kindInfraEnv:
			err = one(&mf.InfraEnv, o)
		case kindCIS:
			err = one(&mf.ClusterImageSet, o)
		case kindNMState:
			mf.NMStateConfigs = append(mf.NMStateConfigs, o)
		case kindSecret:
			secrets = append(secrets, o)
		}
		if err != nil {
			return nil, err
		}
	}
	want := ""
	if mf.ClusterDeployment != nil {
		want, _, _ = unstructured.NestedString(mf.ClusterDeployment.Object, "spec", "pullSecretRef", "name")
	}
	for _, s := range secrets {
		if s.GetName() == want || (want == "" && len(secrets) == 1) {
			mf.PullSecret = s
		}
	}
	return mf, nil
}
