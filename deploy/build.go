package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Object is one rendered Kubernetes object, as decoded from YAML.
type Object = map[string]any

// Rendered is a kustomization's output: the YAML of each object and its
// decoded form, in kustomize's order.
type Rendered struct {
	YAML    [][]byte
	Objects []Object
}

// Build renders the kustomization in dir (a directory path on disk) with
// kustomize's default options, as `kubectl apply -k dir` would.
func Build(dir string) (*Rendered, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("deploy: kustomize build %s: %w", dir, err)
	}
	out := &Rendered{}
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("deploy: %s: %w", r.CurId(), err)
		}
		var o Object
		if err := yaml.Unmarshal(b, &o); err != nil {
			return nil, fmt.Errorf("deploy: %s: %w", r.CurId(), err)
		}
		out.YAML = append(out.YAML, b)
		out.Objects = append(out.Objects, o)
	}
	return out, nil
}

// BuildWith renders the kustomization in dir with the components in
// components added, as a user's overlay that opts into them would:
//
//	resources: [DIR]
//	components: [COMPONENT...]
func BuildWith(dir string, components ...string) (*Rendered, error) {
	tmp, err := os.MkdirTemp("", "execfarm-kustomize-")
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	defer os.RemoveAll(tmp)
	// kustomize takes relative paths only.
	rel := func(p string) (string, error) {
		a, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		return filepath.Rel(tmp, a)
	}
	d, err := rel(dir)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	var cs []string
	for _, c := range components {
		r, err := rel(c)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		cs = append(cs, r)
	}
	k := "resources: [" + d + "]\ncomponents: [" + strings.Join(cs, ", ") + "]\n"
	if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	return Build(tmp)
}

// Find returns the objects of kind (and name, unless "").
func (r *Rendered) Find(kind, name string) []Object {
	var out []Object
	for _, o := range r.Objects {
		if o["kind"] != kind {
			continue
		}
		if md, _ := o["metadata"].(map[string]any); name == "" || md["name"] == name {
			out = append(out, o)
		}
	}
	return out
}

// Container returns the container named name of the pod template of the
// DaemonSet named ds, or nil.
func (r *Rendered) Container(ds, name string) map[string]any {
	for _, d := range r.Find("DaemonSet", ds) {
		spec, _ := d["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		pod, _ := tmpl["spec"].(map[string]any)
		cs, _ := pod["containers"].([]any)
		for _, c := range cs {
			if m, _ := c.(map[string]any); m["name"] == name {
				return m
			}
		}
	}
	return nil
}
