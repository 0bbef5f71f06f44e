package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// docs decodes every YAML document of a manifest file.
func docs(t *testing.T, name string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("base", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: %v", name, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

func dig(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, ok := m.(map[string]any)
			if !ok {
				return nil
			}
			m = mm[k]
		case int:
			s, ok := m.([]any)
			if !ok || k >= len(s) {
				return nil
			}
			m = s[k]
		}
	}
	return m
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	k := docs(t, "kustomization.yaml")[0]
	listed := map[string]bool{}
	for _, r := range k["resources"].([]any) {
		listed[r.(string)] = true
		docs(t, r.(string)) // parses
	}
	files, _ := filepath.Glob("base/*.yaml")
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !listed[b] {
			t.Errorf("%s is not listed in kustomization.yaml", b)
		}
	}
}

func TestDaemonSet(t *testing.T) {
	ds := docs(t, "daemonset.yaml")[0]
	if ds["kind"] != "DaemonSet" {
		t.Fatalf("kind = %v", ds["kind"])
	}
	c := dig(ds, "spec", "template", "spec", "containers", 0)
	if dig(c, "securityContext", "privileged") != true {
		t.Error("the supervisor must run privileged (namespaces, mounts, cgroups)")
	}
	if args := dig(c, "args", 0); args != "serve" {
		t.Errorf("first arg = %v, want serve", args)
	}
	env := map[string]string{}
	for _, e := range dig(c, "env").([]any) {
		env[dig(e, "name").(string)] = dig(e, "value").(string)
	}
	if env["SANDBOX_TCP_HOST"] == "0.0.0.0" && env["SANDBOX_TRANSPORT_MODE"] == "insecure" {
		t.Error("insecure TCP on a pod address is refused by the supervisor")
	}
	if env["SANDBOX_TRANSPORT_MODE"] != "mtls" {
		t.Errorf("transport mode = %q, want mtls", env["SANDBOX_TRANSPORT_MODE"])
	}
	sa := dig(ds, "spec", "template", "spec", "serviceAccountName")
	found := false
	for _, d := range docs(t, "rbac.yaml") {
		if d["kind"] == "ServiceAccount" && dig(d, "metadata", "name") == sa {
			found = true
		}
		if d["kind"] == "ClusterRole" {
			for _, r := range dig(d, "rules").([]any) {
				for _, v := range dig(r, "verbs").([]any) {
					if v != "get" && v != "list" && v != "watch" {
						t.Errorf("ClusterRole grants %v; the default policy is read-only", v)
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("serviceAccountName %v has no ServiceAccount in rbac.yaml", sa)
	}
}

// TestDockerfile reads the Dockerfile (no Docker engine in CI): stages,
// the binaries built are the ones copied, and the entrypoint is the
// supervisor.
func TestDockerfile(t *testing.T) {
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var froms, copies []string
	var entry, buildLine string
	sc := bufio.NewScanner(f)
	var cont string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line = cont + line
		cont = ""
		switch {
		case strings.HasPrefix(line, "FROM "):
			froms = append(froms, line)
		case strings.HasPrefix(line, "COPY --from=build"):
			copies = append(copies, line)
		case strings.HasPrefix(line, "ENTRYPOINT"):
			entry = line
		case strings.HasPrefix(line, "RUN") && strings.Contains(line, "go build"):
			buildLine = line
		}
	}
	if len(froms) < 2 || !strings.Contains(froms[0], "AS build") || strings.Contains(froms[len(froms)-1], " AS ") {
		t.Fatalf("want a build stage first and an unnamed runtime stage last, got %q", froms)
	}
	goVersion := regexp.MustCompile(`golang:(\d+\.\d+)`).FindStringSubmatch(froms[0])
	mod, _ := os.ReadFile("../go.mod")
	if goVersion == nil || !strings.Contains(string(mod), "go "+goVersion[1]) {
		t.Errorf("build image %q does not match go.mod's go version", froms[0])
	}
	if !strings.Contains(buildLine, "CGO_ENABLED=1") {
		t.Errorf("go build must use cgo (the worker's bounding-set constructor and libpsx): %q", buildLine)
	}
	for _, bin := range []string{"execfarm", "execfarm-worker", "execfarm-goja"} {
		if !strings.Contains(buildLine, "./cmd/"+bin) {
			t.Errorf("go build does not build ./cmd/%s: %q", bin, buildLine)
		}
		ok := false
		for _, c := range copies {
			if strings.Contains(c, "/out/"+bin+" /opt/execfarm/bin/"+bin) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s is not copied into the image", bin)
		}
	}
	// Sandboxes bind /usr: no execfarm binary may live there.
	for _, c := range copies {
		if strings.Contains(c, "/out/") && strings.Contains(c, " /usr") {
			t.Errorf("an execfarm binary is copied under /usr, visible in every sandbox: %q", c)
		}
	}
	// An init is PID 1 and reaps orphans (workers of a dead fork server);
	// it must be installed in the runtime stage.
	if !strings.HasPrefix(entry, `ENTRYPOINT ["/usr/bin/tini", "--", "/opt/execfarm/bin/execfarm"`) {
		t.Errorf("ENTRYPOINT = %q, want tini running /opt/execfarm/bin/execfarm", entry)
	}
	if df, _ := os.ReadFile("../Dockerfile"); !regexp.MustCompile(`apt-get install[^\n]*\btini\b`).Match(df) {
		t.Error("the runtime stage does not install tini")
	}
	// The node runtime: its bundle is installed from the checked-in lock
	// file and found through EXECFARM_NODE_BUNDLE.
	df, _ := os.ReadFile("../Dockerfile")
	for _, want := range []string{"runtime/node/bundle/package-lock.json", "npm ci", "EXECFARM_NODE_BUNDLE=/opt/execfarm/node-bundle", "COPY --from=bundle /bundle /opt/execfarm/node-bundle"} {
		if !strings.Contains(string(df), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if _, err := os.Stat("../runtime/node/bundle/package-lock.json"); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat("../cmd/execfarm-worker/main.go"); err != nil {
		t.Error(err)
	}
}

// TestDaemonSetMetricsPort: the metrics address serve is given listens on
// the container port named "metrics", which the pod declares.
func TestDaemonSetMetricsPort(t *testing.T) {
	c := dig(docs(t, "daemonset.yaml")[0], "spec", "template", "spec", "containers", 0)
	addr := ""
	for _, a := range dig(c, "args").([]any) {
		if v, ok := strings.CutPrefix(a.(string), "--metrics-address="); ok {
			addr = v
		}
	}
	if addr == "" {
		t.Fatal("serve has no --metrics-address: the DaemonSet exports no metrics")
	}
	_, port, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("--metrics-address=%s has no port", addr)
	}
	declared := false
	for _, p := range dig(c, "ports").([]any) {
		if dig(p, "name") == "metrics" && fmt.Sprint(dig(p, "containerPort")) == port {
			declared = true
		}
	}
	if !declared {
		t.Errorf("metrics port %s is not declared as the container port named metrics", port)
	}
}

// TestNetworkPolicyGuardsMetrics: the unauthenticated metrics port is
// reachable only from selected namespaces, and the policy selects the
// DaemonSet's pods.
func TestNetworkPolicyGuardsMetrics(t *testing.T) {
	np := docs(t, "networkpolicy.yaml")[0]
	ds := docs(t, "daemonset.yaml")[0]
	if fmt.Sprint(dig(np, "spec", "podSelector", "matchLabels")) != fmt.Sprint(dig(ds, "spec", "selector", "matchLabels")) {
		t.Errorf("policy selects %v, DaemonSet pods are %v", dig(np, "spec", "podSelector", "matchLabels"), dig(ds, "spec", "selector", "matchLabels"))
	}
	for _, rule := range dig(np, "spec", "ingress").([]any) {
		for _, p := range dig(rule, "ports").([]any) {
			if dig(p, "port") == "metrics" && dig(rule, "from") == nil {
				t.Error("the metrics port is open to every peer")
			}
		}
	}
}
