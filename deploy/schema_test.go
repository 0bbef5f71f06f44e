package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// Where the schemas come from, pinned in schema-modules.txt: the
// Kubernetes API is the OpenAPI document (api/openapi-spec/swagger.json)
// of the k8s.io/kubernetes release that matches the k8s.io libraries
// go.mod requires (client-go v0.X.Y is Kubernetes v1.X.Y); the CRDs are
// cert-manager's and the Prometheus Operator's own, as they install them.
// All three are Go modules, fetched by `go mod download` from the module
// proxy (the only network a test may use) into the module cache, where
// .ci/run has put them already.
const (
	kubernetesPath   = "k8s.io/kubernetes"
	certManagerPath  = "github.com/cert-manager/cert-manager"
	promOperatorPath = "github.com/prometheus-operator/prometheus-operator"
)

// crdFiles are the CRDs the manifests use, by module path and path
// inside the module.
var crdFiles = map[string][]string{
	certManagerPath: {"deploy/crds/cert-manager.io_certificates.yaml", "deploy/crds/cert-manager.io_issuers.yaml"},
	promOperatorPath: {"example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
		"example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"},
}

// schemaModules returns schema-modules.txt's modules, "path@version" by
// path, after checking that it pins k8s.io/kubernetes at the version
// matching go.mod's k8s.io/client-go and every module crdFiles names.
func schemaModules(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("schema-modules.txt")
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		path, _, ok := strings.Cut(line, "@")
		if !ok {
			t.Fatalf("schema-modules.txt: %q is not path@version", line)
		}
		mods[path] = line
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go v0\.(\d+)\.(\d+)\s*$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/client-go v0.X.Y")
	}
	if want := fmt.Sprintf("%s@v1.%s.%s", kubernetesPath, m[1], m[2]); mods[kubernetesPath] != want {
		t.Fatalf("schema-modules.txt pins %q; go.mod's k8s.io/client-go is %s", mods[kubernetesPath], want)
	}
	for path := range crdFiles {
		if mods[path] == "" {
			t.Fatalf("schema-modules.txt pins no %s", path)
		}
	}
	return mods
}

// moduleDirs caches downloaded modules' directories for the test binary.
var moduleDirs sync.Map

// moduleDir returns the directory of module@version in the module cache,
// downloading it through the module proxy if it is not there.
func moduleDir(t *testing.T, modVersion string) string {
	t.Helper()
	if d, ok := moduleDirs.Load(modVersion); ok {
		return d.(string)
	}
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = t.TempDir() // outside this module: go.mod stays as it is
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Error != "" || info.Dir == "" {
		t.Fatalf("go mod download %s: %v %s %s", modVersion, err, info.Error, out)
	}
	moduleDirs.Store(modVersion, info.Dir)
	return info.Dir
}

// schemaFile is the file name kubeconform's template
// "{{ .ResourceKind }}{{ .KindSuffix }}.json" gives a kind of apiVersion:
// "daemonset-apps-v1.json", "service-v1.json",
// "certificate-cert-manager-v1.json".
func schemaFile(kind, apiVersion string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	suffix := "-" + strings.ToLower(strings.Split(group, ".")[0])
	if ok {
		suffix += "-" + strings.ToLower(version)
	}
	return strings.ToLower(kind) + suffix + ".json"
}

const objectMetaRef = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

// schemas generates strict standalone JSON schemas (draft 4, which
// kubeconform compiles them as) into a new directory and returns it:
// every built-in kind of the pinned Kubernetes OpenAPI document that
// kinds names ("apps/v1 DaemonSet"), and every kind of the CRDs in
// crdFiles. Strict: an object schema that lists its properties refuses
// any other (additionalProperties false), unless the API says it keeps
// unknown fields; kind and apiVersion must be the schema's own.
func schemas(t *testing.T, kinds map[string]bool) string {
	t.Helper()
	dir := t.TempDir()
	mods := schemaModules(t)
	b, err := os.ReadFile(filepath.Join(moduleDir(t, mods[kubernetesPath]), "api/openapi-spec/swagger.json"))
	if err != nil {
		t.Fatal(err)
	}
	var swagger struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(b, &swagger); err != nil {
		t.Fatal(err)
	}
	defs := swagger.Definitions
	write := func(kind, apiVersion string, root map[string]any, refs []string) {
		doc := convert(root)
		props, _ := doc["properties"].(map[string]any)
		if props == nil {
			t.Fatalf("%s %s: schema has no properties", apiVersion, kind)
		}
		props["kind"] = map[string]any{"type": "string", "enum": []any{kind}}
		props["apiVersion"] = map[string]any{"type": "string", "enum": []any{apiVersion}}
		closure := map[string]any{}
		var visit func(string)
		visit = func(name string) {
			if _, ok := closure[name]; ok {
				return
			}
			d, ok := defs[name]
			if !ok {
				t.Fatalf("%s %s: no definition %s", apiVersion, kind, name)
			}
			closure[name] = convert(d)
			for _, r := range refsIn(d) {
				visit(r)
			}
		}
		for _, r := range append(refs, refsIn(root)...) {
			visit(r)
		}
		replaceSpecial(closure)
		doc["definitions"] = closure
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, schemaFile(kind, apiVersion)), out, 0o644); err != nil {
			t.Fatal(err)
		}
		delete(kinds, apiVersion+" "+kind)
	}
	for name, d := range defs {
		gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk := g.(map[string]any)
			apiVersion := gvk["version"].(string)
			if gvk["group"] != "" {
				apiVersion = gvk["group"].(string) + "/" + apiVersion
			}
			if kinds[apiVersion+" "+gvk["kind"].(string)] {
				write(gvk["kind"].(string), apiVersion, defs[name], nil)
			}
		}
	}
	for mod, files := range crdFiles {
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(moduleDir(t, mods[mod]), f))
			if err != nil {
				t.Fatal(err)
			}
			var crd struct {
				Spec struct {
					Group string
					Names struct{ Kind string }
					// Versions holds each served version's schema.
					Versions []struct {
						Name   string
						Schema struct {
							OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
						}
					}
				}
			}
			if err := yaml.Unmarshal(b, &crd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, v := range crd.Spec.Versions {
				root := v.Schema.OpenAPIV3Schema
				// The CRD leaves metadata open; the API server checks it
				// as every object's: use the built-in ObjectMeta.
				root["properties"].(map[string]any)["metadata"] = map[string]any{"$ref": "#/definitions/" + objectMetaRef}
				write(crd.Spec.Names.Kind, crd.Spec.Group+"/"+v.Name, root, []string{objectMetaRef})
			}
		}
	}
	for k := range kinds {
		t.Errorf("no schema for %s in the pinned sources", k)
	}
	return dir
}

// replaceSpecial gives the API's string-typed scalars the JSON forms
// they accept: IntOrString is an integer or a string, a Quantity a
// number or a string (as Kubernetes' own JSON decoding takes them).
func replaceSpecial(defs map[string]any) {
	for name, alt := range map[string]string{
		"io.k8s.apimachinery.pkg.util.intstr.IntOrString": "integer",
		"io.k8s.apimachinery.pkg.api.resource.Quantity":   "number",
	} {
		if _, ok := defs[name]; ok {
			defs[name] = map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": alt}}}
		}
	}
}

// refsIn lists the definitions a schema refers to ("#/definitions/X").
func refsIn(s any) []string {
	var out []string
	switch v := s.(type) {
	case map[string]any:
		for k, x := range v {
			if r, ok := x.(string); ok && k == "$ref" {
				out = append(out, strings.TrimPrefix(r, "#/definitions/"))
			} else {
				out = append(out, refsIn(x)...)
			}
		}
	case []any:
		for _, x := range v {
			out = append(out, refsIn(x)...)
		}
	}
	return out
}

// keep are the validation keywords a converted schema keeps; the rest
// (descriptions, Kubernetes' x- extensions, defaults, CEL rules) do not
// constrain a manifest's shape.
var keep = map[string]bool{
	"type": true, "format": true, "enum": true, "pattern": true, "required": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"minProperties": true, "maxProperties": true,
}

// convert turns one OpenAPI schema (Swagger 2.0's or a CRD's OpenAPI
// v3.0) into a strict JSON schema.
func convert(s map[string]any) map[string]any {
	if r, ok := s["$ref"]; ok {
		return map[string]any{"$ref": r}
	}
	out := map[string]any{}
	for k, v := range s {
		switch {
		case keep[k]:
			out[k] = v
		case k == "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				props[name] = convert(p.(map[string]any))
			}
			out[k] = props
		case k == "items":
			if m, ok := v.(map[string]any); ok {
				out[k] = convert(m)
			}
		case k == "additionalProperties":
			if m, ok := v.(map[string]any); ok {
				out[k] = convert(m)
			} else {
				out[k] = v
			}
		case k == "allOf", k == "anyOf", k == "oneOf":
			var list []any
			for _, x := range v.([]any) {
				list = append(list, convert(x.(map[string]any)))
			}
			out[k] = list
		case k == "not":
			out[k] = convert(v.(map[string]any))
		}
	}
	if out["format"] == "int-or-string" || s["x-kubernetes-int-or-string"] == true {
		delete(out, "format")
		delete(out, "type")
		delete(out, "anyOf")
		out["oneOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
	}
	if t, ok := out["type"].(string); ok && s["nullable"] == true {
		out["type"] = []any{t, "null"}
	}
	_, hasProps := out["properties"]
	_, hasAdditional := out["additionalProperties"]
	if hasProps && !hasAdditional && s["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return out
}
