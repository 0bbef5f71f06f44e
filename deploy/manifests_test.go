package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/execfarm/execfarm/supervisor"
	"github.com/execfarm/execfarm/supervisor/limits"
)

// dig walks m by map keys and slice indices; nil when a step is missing.
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

// container is the supervisor's container and its pod spec in r.
func container(t *testing.T, r *Rendered) (c, pod map[string]any) {
	t.Helper()
	ds := r.Find("DaemonSet", "execfarm")
	if len(ds) != 1 {
		t.Fatalf("%d DaemonSets named execfarm", len(ds))
	}
	pod, _ = dig(ds[0], "spec", "template", "spec").(map[string]any)
	c = r.Container("execfarm", "execfarm")
	if c == nil {
		t.Fatal("no container named execfarm")
	}
	return c, pod
}

// flags returns serve's --name=value arguments.
func flags(t *testing.T, c map[string]any) map[string]string {
	t.Helper()
	args, _ := c["args"].([]any)
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("args %v do not start with serve", args)
	}
	out := map[string]string{}
	for _, a := range args[1:] {
		k, v, ok := strings.Cut(strings.TrimPrefix(a.(string), "--"), "=")
		if !ok || !strings.HasPrefix(a.(string), "--") {
			t.Fatalf("argument %q is not --name=value", a)
		}
		if _, dup := out[k]; dup {
			t.Errorf("--%s given twice", k)
		}
		out[k] = v
	}
	return out
}

// env returns the container's literal environment values, and the
// field path of those taken from the pod (valueFrom.fieldRef).
func env(c map[string]any) (values, fields map[string]string) {
	values, fields = map[string]string{}, map[string]string{}
	for _, e := range dig(c, "env").([]any) {
		name := dig(e, "name").(string)
		if v, ok := dig(e, "value").(string); ok {
			values[name] = v
		}
		if f, ok := dig(e, "valueFrom", "fieldRef", "fieldPath").(string); ok {
			fields[name] = f
		}
	}
	return values, fields
}

func port(t *testing.T, c map[string]any, name string) int {
	t.Helper()
	for _, p := range dig(c, "ports").([]any) {
		if dig(p, "name") == name {
			n, _ := strconv.Atoi(fmt.Sprint(dig(p, "containerPort")))
			return n
		}
	}
	t.Fatalf("no container port named %s", name)
	return 0
}

// TestKustomizationsListEveryFile: every YAML file of each kustomization
// directory is a resource or a patch of it, so nothing shipped is
// silently left out.
func TestKustomizationsListEveryFile(t *testing.T) {
	for _, dir := range append(slices.Clone(kustomizations), "components/cluster-read") {
		b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Resources []string
			Patches   []struct{ Path string }
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		listed := map[string]bool{}
		for _, r := range k.Resources {
			listed[r] = true
		}
		for _, p := range k.Patches {
			listed[p.Path] = true
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			if b := filepath.Base(f); b != "kustomization.yaml" && !listed[b] {
				t.Errorf("%s/%s is in no resources or patches", dir, b)
			}
		}
	}
}

// TestDaemonSetEverywhere checks what every rendering of the DaemonSet
// must hold: a privileged supervisor, its node's name in the environment,
// probes on the probe port serve listens on, metrics on a declared port,
// a termination grace above serve's, and no insecure TCP off loopback.
func TestDaemonSetEverywhere(t *testing.T) {
	for name, r := range renderings(t) {
		if name == "monitoring" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			c, pod := container(t, r)
			if dig(c, "securityContext", "privileged") != true {
				t.Error("the supervisor must run privileged (namespaces, mounts, cgroups)")
			}
			f := flags(t, c)
			values, fields := env(c)
			if fields["EXECFARM_NODE_NAME"] != "spec.nodeName" {
				t.Errorf("EXECFARM_NODE_NAME comes from %q, want spec.nodeName", fields["EXECFARM_NODE_NAME"])
			}
			_, probePort, _ := strings.Cut(f["probe-address"], ":")
			if strconv.Itoa(port(t, c, "probe")) != probePort {
				t.Errorf("--probe-address=%s is not the container port named probe", f["probe-address"])
			}
			for probe, path := range map[string]string{"startupProbe": supervisor.StartupPath, "livenessProbe": supervisor.LivenessPath, "readinessProbe": supervisor.ReadinessPath} {
				if dig(c, probe, "httpGet", "port") != "probe" || dig(c, probe, "httpGet", "path") != path || dig(c, probe, "grpc") != nil {
					t.Errorf("%s = %v, want an HTTP probe of %s on the port named probe", probe, dig(c, probe), path)
				}
			}
			_, metricsPort, _ := strings.Cut(f["metrics-address"], ":")
			if strconv.Itoa(port(t, c, "metrics")) != metricsPort {
				t.Errorf("--metrics-address=%s is not the container port named metrics", f["metrics-address"])
			}
			grace, err := time.ParseDuration(f["grace"])
			if err != nil {
				t.Fatalf("--grace: %v", err)
			}
			if tg, _ := strconv.Atoi(fmt.Sprint(dig(pod, "terminationGracePeriodSeconds"))); time.Duration(tg)*time.Second <= grace+5*time.Second {
				t.Errorf("terminationGracePeriodSeconds %d leaves no time after --grace=%s", tg, grace)
			}
			if values["SANDBOX_USE_TCP"] == "true" && values["SANDBOX_TCP_HOST"] != "127.0.0.1" && values["SANDBOX_TRANSPORT_MODE"] != "mtls" {
				t.Errorf("TCP on %q without mutual TLS", values["SANDBOX_TCP_HOST"])
			}
			if img, _ := c["image"].(string); strings.HasSuffix(img, ":latest") || !regexp.MustCompile(`[:@]`).MatchString(img[strings.LastIndex(img, "/")+1:]) {
				t.Errorf("image %q is latest or untagged", img)
			}
			sa := dig(pod, "serviceAccountName")
			if len(r.Find("ServiceAccount", sa.(string))) != 1 {
				t.Errorf("serviceAccountName %v has no ServiceAccount", sa)
			}
			if ns := r.Find("Namespace", "execfarm"); len(ns) != 1 || dig(ns[0], "metadata", "labels", "pod-security.kubernetes.io/enforce") != "privileged" {
				t.Error("the namespace does not let Pod Security admission run a privileged pod")
			}
		})
	}
}

// TestProductionOverlay checks what the production overlay promises.
func TestProductionOverlay(t *testing.T) {
	r, err := Build("overlays/production")
	if err != nil {
		t.Fatal(err)
	}
	c, pod := container(t, r)
	ds := r.Find("DaemonSet", "execfarm")[0]
	values, _ := env(c)
	f := flags(t, c)

	if values["SANDBOX_TRANSPORT_MODE"] != "mtls" || values["SANDBOX_USE_TCP"] != "true" {
		t.Errorf("transport %q over TCP %q, want mtls over TCP", values["SANDBOX_TRANSPORT_MODE"], values["SANDBOX_USE_TCP"])
	}
	if img := c["image"].(string); !regexp.MustCompile(`@sha256:[0-9a-f]{64}$`).MatchString(img) {
		t.Errorf("image %q is not pinned by digest", img)
	}
	for _, p := range []string{"seccompProfile", "appArmorProfile"} {
		if dig(c, "securityContext", p, "type") != "Unconfined" {
			t.Errorf("securityContext.%s is not stated Unconfined", p)
		}
	}
	if dig(ds, "spec", "updateStrategy", "type") != "RollingUpdate" || dig(ds, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable") == nil ||
		fmt.Sprint(dig(ds, "spec", "updateStrategy", "rollingUpdate", "maxSurge")) != "0" {
		t.Errorf("updateStrategy %v: want a rolling update with maxUnavailable and maxSurge 0 (two supervisors cannot share a node)", dig(ds, "spec", "updateStrategy"))
	}
	if pc := dig(pod, "priorityClassName"); pc == nil || len(r.Find("PriorityClass", pc.(string))) != 1 {
		t.Errorf("priorityClassName %v is not shipped", pc)
	}
	if tol, _ := dig(pod, "tolerations").([]any); len(tol) == 0 {
		t.Error("no tolerations")
	} else {
		for _, x := range tol {
			if strings.Contains(fmt.Sprint(dig(x, "key")), "control-plane") || dig(x, "key") == nil {
				t.Errorf("toleration %v lets untrusted code onto control-plane nodes", x)
			}
		}
	}
	// The script cache outlives the pod.
	cacheDir := values["SCRIPTS_CACHE_DIR"]
	var cacheVolume string
	for _, m := range dig(c, "volumeMounts").([]any) {
		if dig(m, "mountPath") == cacheDir {
			cacheVolume = dig(m, "name").(string)
		}
	}
	tlsSecret := ""
	for _, v := range dig(pod, "volumes").([]any) {
		if dig(v, "name") == cacheVolume && dig(v, "hostPath", "path") == nil {
			t.Errorf("the script cache %s is not on a hostPath volume", cacheDir)
		}
		if dig(v, "name") == "tls" {
			tlsSecret = dig(v, "secret", "secretName").(string)
		}
	}
	if cacheVolume == "" {
		t.Errorf("SCRIPTS_CACHE_DIR %q is not a mounted volume", cacheDir)
	}
	// The mounted secret is the Certificate's, whose issuer is shipped.
	certs := r.Find("Certificate", "")
	served := false
	for _, crt := range certs {
		if dig(crt, "spec", "secretName") == tlsSecret {
			served = true
		}
		ref := dig(crt, "spec", "issuerRef", "name").(string)
		if dig(crt, "spec", "issuerRef", "kind") != "Issuer" || len(r.Find("Issuer", ref)) != 1 {
			t.Errorf("Certificate %v names issuer %s, which is not shipped", dig(crt, "metadata", "name"), ref)
		}
	}
	if !served {
		t.Errorf("no Certificate writes the mounted secret %q", tlsSecret)
	}
	svc := r.Find("Service", "execfarm")
	if len(svc) != 1 || dig(svc[0], "spec", "internalTrafficPolicy") != "Local" || dig(svc[0], "spec", "ports", 0, "targetPort") != "grpc" {
		t.Errorf("Service %v: want internalTrafficPolicy Local to the grpc port", svc)
	}
	if strconv.Itoa(port(t, c, "grpc")) != values["SANDBOX_TCP_PORT"] {
		t.Errorf("SANDBOX_TCP_PORT %s is not the container port named grpc", values["SANDBOX_TCP_PORT"])
	}

	// Resources: sandbox cgroups nest under the container's, so its
	// limits must hold every sandbox at the default limits.
	def := limits.Default()
	conc, err1 := strconv.Atoi(f["max-concurrent"])
	warm, err2 := strconv.Atoi(f["warm-pool"])
	if err1 != nil || err2 != nil || conc <= 0 {
		t.Fatalf("--max-concurrent=%q --warm-pool=%q: want numbers", f["max-concurrent"], f["warm-pool"])
	}
	quantity := func(path ...any) resource.Quantity {
		q, err := resource.ParseQuantity(fmt.Sprint(dig(c, append([]any{"resources"}, path...)...)))
		if err != nil {
			t.Fatalf("resources %v: %v", path, err)
		}
		return q
	}
	const supervisorBytes = 256 << 20
	if mem, want := quantity("limits", "memory"), int64(conc+warm)*def.MemoryBytes+supervisorBytes; mem.Value() < want {
		t.Errorf("memory limit %s < %d sandboxes × %d bytes + the supervisor's %d", mem.String(), conc+warm, def.MemoryBytes, supervisorBytes)
	}
	if cpu, want := quantity("limits", "cpu"), int64(conc)*int64(def.CPUPercent)*10; cpu.MilliValue() < want {
		t.Errorf("CPU limit %s < %d sandboxes × %d%% of a core", cpu.String(), conc, def.CPUPercent)
	}
	for _, res := range []string{"cpu", "memory"} {
		if req, lim := quantity("requests", res), quantity("limits", res); req.Cmp(lim) > 0 {
			t.Errorf("%s request %s above its limit %s", res, req.String(), lim.String())
		}
	}
}

// TestNetworkPolicyGuardsMetrics: in every rendering the unauthenticated
// metrics port is reachable only from selected namespaces, and the policy
// selects the DaemonSet's pods; production opens the gRPC port.
func TestNetworkPolicyGuardsMetrics(t *testing.T) {
	for name, r := range renderings(t) {
		if name == "monitoring" {
			continue
		}
		np := r.Find("NetworkPolicy", "execfarm")
		ds := r.Find("DaemonSet", "execfarm")
		if len(np) != 1 || len(ds) != 1 {
			t.Fatalf("%s: %d policies, %d DaemonSets", name, len(np), len(ds))
		}
		if fmt.Sprint(dig(np[0], "spec", "podSelector", "matchLabels")) != fmt.Sprint(dig(ds[0], "spec", "selector", "matchLabels")) {
			t.Errorf("%s: policy selects %v, DaemonSet pods are %v", name, dig(np[0], "spec", "podSelector"), dig(ds[0], "spec", "selector"))
		}
		open := map[string]bool{}
		for _, rule := range dig(np[0], "spec", "ingress").([]any) {
			for _, p := range dig(rule, "ports").([]any) {
				if dig(rule, "from") == nil {
					open[dig(p, "port").(string)] = true
				}
			}
		}
		if open["metrics"] {
			t.Errorf("%s: the metrics port is open to every peer", name)
		}
		if strings.HasPrefix(name, "overlays/production") != open["grpc"] {
			t.Errorf("%s: gRPC port open %v", name, open["grpc"])
		}
	}
}
