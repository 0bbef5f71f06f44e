package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

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
	// Node.js: an LTS line (even major) supported for long enough, the
	// same in the bundle's stage and the runtime's.
	nodes := regexp.MustCompile(`(?m)^FROM node:(\d+)-`).FindAllStringSubmatch(string(mustRead(t, "../Dockerfile")), -1)
	if len(nodes) != 2 || nodes[0][1] != nodes[1][1] {
		t.Errorf("node stages %v: want the bundle and the runtime on one Node.js", nodes)
	} else if major := nodes[0][1]; major != "24" {
		t.Errorf("Node.js %s: want 24, the LTS line supported until April 2028 (20 ended in April 2026, 22 ends in April 2027)", major)
	}
	if !strings.Contains(froms[0], "bookworm") || !strings.Contains(froms[len(froms)-1], "bookworm") {
		t.Errorf("build %q and runtime %q must share a Debian release (the cgo binaries' glibc)", froms[0], froms[len(froms)-1])
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

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDockerignore reads .dockerignore with BuildKit's own matcher: it
// keeps every file the image's build needs (go.mod, go.sum, the Go files
// of every package the binaries import, the bundle's lock file) and
// leaves out version control, local builds and node_modules.
func TestDockerignore(t *testing.T) {
	f, err := os.Open("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	ignored := func(p string) bool {
		m, err := pm.MatchesOrParentMatches(filepath.ToSlash(p))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	need := []string{"go.mod", "go.sum", "Dockerfile", "runtime/node/bundle/package.json", "runtime/node/bundle/package-lock.json"}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .CgoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}",
		"../cmd/execfarm", "../cmd/execfarm-worker", "../cmd/execfarm-goja").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := filepath.Abs("..")
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], root+string(filepath.Separator)) {
			continue // a module dependency, fetched by go mod download
		}
		rel, _ := filepath.Rel(root, fields[0])
		for _, f := range fields[1:] {
			need = append(need, filepath.Join(rel, f))
		}
	}
	if len(need) < 50 {
		t.Fatalf("only %d files needed: go list found no packages", len(need))
	}
	for _, p := range need {
		if ignored(p) {
			t.Errorf("%s is needed by the build and ignored", p)
		}
	}
	for _, p := range []string{".git/HEAD", "bin/execfarm", ".tools/staticcheck", "runtime/node/bundle/node_modules/uvu/package.json",
		"test/compat/node_modules/x", "supervisor/x.test", "deploy/base/daemonset.yaml"} {
		if !ignored(p) {
			t.Errorf("%s is sent to the builder", p)
		}
	}
}
