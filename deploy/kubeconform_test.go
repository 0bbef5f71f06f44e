package deploy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
)

// kustomizations are the directories whose rendering must validate:
// the base, both overlays, and the monitoring objects.
var kustomizations = []string{"base", "overlays/production", "overlays/dev", "monitoring"}

// renderings renders every kustomization, and the opt-in component on
// both overlays, by name.
func renderings(t *testing.T) map[string]*Rendered {
	t.Helper()
	out := map[string]*Rendered{}
	for _, k := range kustomizations {
		r, err := Build(k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = r
	}
	for _, o := range []string{"overlays/production", "overlays/dev"} {
		r, err := BuildWith(o, "components/cluster-read")
		if err != nil {
			t.Fatal(err)
		}
		out[o+"+cluster-read"] = r
	}
	return out
}

// strictValidator is kubeconform in strict mode (unknown fields and
// duplicate keys refused) over schemas generated for kinds.
func strictValidator(t *testing.T, kinds map[string]bool) validator.Validator {
	t.Helper()
	dir := schemas(t, kinds)
	v, err := validator.New([]string{filepath.Join(dir, "{{ .ResourceKind }}{{ .KindSuffix }}.json")}, validator.Opts{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func kindsOf(rs ...*Rendered) map[string]bool {
	kinds := map[string]bool{}
	for _, r := range rs {
		for _, o := range r.Objects {
			kinds[o["apiVersion"].(string)+" "+o["kind"].(string)] = true
		}
	}
	return kinds
}

// TestKubeconformStrict renders the base, both overlays (with and
// without the cluster-read opt-in) and the monitoring objects, and
// validates every object with kubeconform in strict mode against schemas
// generated from the pinned Kubernetes OpenAPI document and CRDs. It
// first checks that the validator refuses what it must: an unknown
// field, in a built-in kind and in a CRD's, and a wrong kind.
func TestKubeconformStrict(t *testing.T) {
	all := renderings(t)
	var rs []*Rendered
	for _, r := range all {
		rs = append(rs, r)
	}
	kinds := kindsOf(rs...)
	nkinds := len(kinds)
	v := strictValidator(t, kinds)

	for name, bad := range map[string]string{
		"unknown container field": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: i, imagePullPolicyy: Always}]\n",
		"unknown metadata field":  "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, lables: {a: b}}\n",
		"unknown CRD field":       "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: x}\nspec:\n  selector: {}\n  podMetricsEndpointz: []\n",
		"wrong type":              "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{port: fifty}]\n",
	} {
		if res := v.ValidateResource(resource.Resource{Path: name, Bytes: []byte(bad)}); res.Status != validator.Invalid {
			t.Errorf("%s: status %v (%v), want invalid", name, res.Status, res.Err)
		}
	}

	n := 0
	defer func() { t.Logf("%d objects of %d kinds validated", n, nkinds) }()
	for name, r := range all {
		for i, y := range r.YAML {
			n++
			res := v.ValidateResource(resource.Resource{Path: name, Bytes: y})
			if res.Status != validator.Valid {
				var msgs []string
				for _, e := range res.ValidationErrors {
					msgs = append(msgs, e.Path+": "+e.Msg)
				}
				t.Errorf("%s: %s %v: status %v: %v %s", name, r.Objects[i]["kind"], r.Objects[i]["metadata"], res.Status, res.Err, strings.Join(msgs, "; "))
			}
		}
	}
}
