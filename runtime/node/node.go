package node

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"github.com/execfarm/execfarm/runtime/deterministic"
	"github.com/execfarm/execfarm/runtime/jsconsole"
	"github.com/execfarm/execfarm/runtime/testresult"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SandboxDir is where the runtime bundle (the directory holding
// node_modules) is bound read-only inside the sandbox.
const SandboxDir = "/.execfarm/node"

// NodePath is the node binary Argv starts when Config.NodePath is empty;
// it is the host's node, visible in the sandbox through the /usr bind.
const NodePath = "/usr/bin/node"

// BundleEnv names the environment variable FindBundle reads when no
// directory is given: the host directory holding the bundle's node_modules.
const BundleEnv = "EXECFARM_NODE_BUNDLE"

// AllowedModulesEnv is the reference server's variable that overrides the
// default allow-list; ParseAllowedModules reads its value.
const AllowedModulesEnv = "SANDBOX_ALLOWED_MODULES"

// alwaysAllowed is added to every allow-list: the reference adds uvu
// because test mode needs it.
const alwaysAllowed = "uvu"

//go:embed prelude.js
var prelude string

// Prelude returns the JavaScript that Argv passes to node -e.
func Prelude() string { return prelude }

// DefaultAllowedModules returns the allow-list used when Config.AllowedModules
// is nil: the reference server's default (@kubernetes/client-node,
// @prodisco/prometheus-client, @prodisco/loki-client, simple-statistics,
// uvu) plus prometheus-query, which the seed documents. Packages on the list
// but not in the bundle fail like any other missing module.
func DefaultAllowedModules() []string {
	return []string{
		"@kubernetes/client-node",
		"prometheus-query",
		"@prodisco/prometheus-client",
		"@prodisco/loki-client",
		"simple-statistics",
		"uvu",
	}
}

// Config says how node is started in the sandbox. Paths are as node sees
// them (sandbox paths), except in tests that run node on the host.
type Config struct {
	// NodePath is the node binary; empty means NodePath.
	NodePath string
	// BundleDir is the directory holding the bundle's node_modules; empty
	// means SandboxDir. node may read only below it (permission model).
	BundleDir string
	// AllowedModules are the package names require admits, with their
	// subpaths; nil means DefaultAllowedModules, an empty non-nil slice
	// admits only uvu, which is always added. Built-ins are never admitted.
	AllowedModules []string
	// KubeconfigPath is a kubeconfig file kc is loaded from; node is
	// allowed to read it. Empty means none.
	KubeconfigPath string
	// KubeServer is the URL of a credential-free Kubernetes API endpoint
	// (e.g. "http://127.0.0.1:8001") that kc points at, with no user
	// credentials. Empty means none. With neither, kc is an empty KubeConfig.
	KubeServer string
	// Tests runs the program in test mode: the program on fd 3 is a
	// test-mode payload (testresult.EncodePayload of AssembleTests), the
	// tests get uvu's test and assert, and results go to fd 4 as JSON
	// lines with the payload's nonce (package testresult), with the
	// harness and the frozen intrinsics shared with the goja runtime.
	Tests bool
	// PrometheusURL is the credential-free Prometheus endpoint (e.g.
	// "http://127.0.0.1:9090"), given to the program as the global
	// PROMETHEUS_URL. Empty means none.
	PrometheusURL string
	// Console has the prelude write the console channel on jsconsole.FD
	// (console lines with their level, the message of an uncaught error),
	// which must then be open for writing.
	Console bool
	// Seed, when set, makes the run deterministic (runtime/deterministic):
	// a clock from deterministic.EpochMs that advances only with timers,
	// and Math.random, crypto.getRandomValues and crypto.randomUUID from
	// deterministic.JS seeded with *Seed. nil = the real clock and
	// randomness.
	Seed *int64
}

// preludeConfig is the JSON the prelude reads from process.argv[1].
type preludeConfig struct {
	Bundle     string   `json:"bundle"`
	Allowed    []string `json:"allowed"`
	Kubeconfig string   `json:"kubeconfig,omitempty"`
	KubeServer string   `json:"kubeServer,omitempty"`
	Prometheus string   `json:"prometheusUrl,omitempty"`
	Harness    string   `json:"harness,omitempty"`
	Lockdown   string   `json:"lockdown,omitempty"`
	ConsoleFD  int      `json:"consoleFd,omitempty"`
	// Deterministic is set for a deterministic run.
	Deterministic *preludeDeterministic `json:"deterministic,omitempty"`
}

// preludeDeterministic is how the prelude makes a run deterministic: the
// seed (decimal: a JSON number cannot hold every int64), the clock's start
// and the generator's source (deterministic.JS).
type preludeDeterministic struct {
	Seed    string `json:"seed"`
	EpochMs int64  `json:"epochMs"`
	Random  string `json:"random"`
}

// Argv returns the command line that runs a program in node: the prelude
// via -e and its configuration as the one script argument. The program
// (Transform's output) must be readable on fd 3, as for goja.
//
// The process must be started with an empty environment: node reads
// NODE_OPTIONS (which can --require a file) and other NODE_* variables
// before the prelude runs, and the prelude empties process.env anyway.
//
// Flags: --experimental-permission with reads allowed below BundleDir (and
// KubeconfigPath) only, so child processes, workers, native addons,
// process.binding and file writes are refused by node itself;
// --enable-source-maps so stack traces name main.ts lines;
// --disallow-code-generation-from-strings (no eval or new Function: they
// would reach node's own dynamic import); --disable-warning for the
// ExperimentalWarning of the permission model and require(esm). No heap
// flag: the sandbox cgroup limits memory, and RLIMIT_AS must stay unset
// because V8 reserves large virtual regions.
//
// It returns ErrConflict when both KubeconfigPath and KubeServer are set
// and ErrBadConfig for a relative path or a module name with spaces.
func Argv(cfg Config) ([]string, error) {
	pc := preludeConfig{Bundle: cfg.BundleDir, Kubeconfig: cfg.KubeconfigPath, KubeServer: cfg.KubeServer, Prometheus: cfg.PrometheusURL}
	if pc.Bundle == "" {
		pc.Bundle = SandboxDir
	}
	if cfg.KubeconfigPath != "" && cfg.KubeServer != "" {
		return nil, fmt.Errorf("%w: KubeconfigPath and KubeServer", ErrConflict)
	}
	for _, p := range []string{pc.Bundle, cfg.KubeconfigPath} {
		if p != "" && (!filepath.IsAbs(p) || strings.ContainsAny(p, ",*")) {
			return nil, fmt.Errorf("%w: path %q", ErrBadConfig, p)
		}
	}
	if cfg.Tests {
		pc.Harness = testresult.Harness
		pc.Lockdown = testresult.Lockdown
	}
	if cfg.Console {
		pc.ConsoleFD = jsconsole.FD
	}
	if cfg.Seed != nil {
		pc.Deterministic = &preludeDeterministic{Seed: strconv.FormatInt(*cfg.Seed, 10), EpochMs: deterministic.EpochMs, Random: deterministic.JS}
	}
	pc.Allowed = cfg.AllowedModules
	if pc.Allowed == nil {
		pc.Allowed = DefaultAllowedModules()
	}
	for _, m := range pc.Allowed {
		if m == "" || strings.ContainsAny(m, " \t\n") {
			return nil, fmt.Errorf("%w: module name %q", ErrBadConfig, m)
		}
	}
	if !slices.Contains(pc.Allowed, alwaysAllowed) {
		pc.Allowed = append(slices.Clip(pc.Allowed), alwaysAllowed)
	}
	arg, err := json.Marshal(pc)
	if err != nil {
		return nil, fmt.Errorf("encode prelude config: %w", err)
	}
	bin := cfg.NodePath
	if bin == "" {
		bin = NodePath
	}
	argv := []string{
		bin,
		"--experimental-permission",
		"--allow-fs-read=" + filepath.Join(pc.Bundle, "*"),
	}
	if cfg.KubeconfigPath != "" {
		argv = append(argv, "--allow-fs-read="+cfg.KubeconfigPath)
	}
	argv = append(argv,
		"--no-addons",
		"--enable-source-maps",
		"--disallow-code-generation-from-strings",
		"--disable-warning=ExperimentalWarning",
		"-e", prelude,
		"--", string(arg),
	)
	return argv, nil
}

// ParseAllowedModules parses a SANDBOX_ALLOWED_MODULES value as the
// reference server does: a JSON array of strings, else a comma-separated
// list; names are trimmed and empty ones dropped. An empty or blank value
// returns nil (use the default list); a value that names no module returns
// ErrBadConfig.
func ParseAllowedModules(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var items []string
	var arr []any
	if json.Unmarshal([]byte(s), &arr) == nil {
		for _, v := range arr {
			if str, ok := v.(string); ok {
				items = append(items, str)
			}
		}
	} else {
		items = strings.Split(s, ",")
	}
	var out []string
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" && !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s=%q names no module", ErrBadConfig, AllowedModulesEnv, s)
	}
	return out, nil
}

// FindBundle returns the host directory holding the bundle's node_modules:
// dir when not empty (a flag), else $EXECFARM_NODE_BUNDLE, else the first
// of <executable dir>/node-bundle and <executable dir>/../runtime/node/bundle
// (a binary in the repo's bin/) that has node_modules. It returns an error
// wrapping ErrNoBundle when the chosen directory has no node_modules.
func FindBundle(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(BundleEnv)
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("node bundle %s: %w", dir, err)
		}
		if !hasModules(abs) {
			return "", fmt.Errorf("%w: %s has no node_modules", ErrNoBundle, abs)
		}
		return abs, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: locate executable: %v", ErrNoBundle, err)
	}
	exeDir := filepath.Dir(exe)
	candidates := []string{
		filepath.Join(exeDir, "node-bundle"),
		filepath.Join(exeDir, "..", "runtime", "node", "bundle"),
	}
	for _, c := range candidates {
		if hasModules(c) {
			return filepath.Clean(c), nil
		}
	}
	return "", fmt.Errorf("%w: set %s or run npm ci --prefix runtime/node/bundle (looked in %s)",
		ErrNoBundle, BundleEnv, strings.Join(candidates, ", "))
}

func hasModules(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "node_modules"))
	return err == nil && fi.IsDir()
}
