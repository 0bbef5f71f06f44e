package deploy

import (
	"os"
	"strings"
	"testing"
)

// TestDaemonSetIsTheCgroup2Scenario: on a cgroup v2 node the DaemonSet,
// in every rendering, is the `pod-hostns` scenario that make test-cgroup2
// runs (test/cgroup2): a privileged container (the host's cgroup
// namespace under containerd and CRI-O) in the pod's own pid namespace,
// with the host's /sys/fs/cgroup mounted read-write at /sys/fs/cgroup,
// and no --cgroup-parent that would leave its own cgroup. The base
// manifest names the scenario, and the scenario exists.
func TestDaemonSetIsTheCgroup2Scenario(t *testing.T) {
	if b := mustRead(t, "base/daemonset.yaml"); !strings.Contains(string(b), "`pod-hostns` scenario of `make test-cgroup2`") {
		t.Error("base/daemonset.yaml does not name the cgroup v2 scenario it matches")
	}
	guest, err := os.ReadFile("../test/cgroup2/guest.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guest), "\n  pod-hostns)\n") {
		t.Error("test/cgroup2/guest.sh has no pod-hostns scenario")
	}
	for name, r := range renderings(t) {
		if name == "monitoring" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			c, pod := container(t, r)
			if dig(c, "securityContext", "privileged") != true {
				t.Error("not privileged: not the scenario's container")
			}
			if dig(pod, "hostPID") == true {
				t.Error("hostPID: the scenario runs in the pod's own pid namespace")
			}
			if _, ok := flags(t, c)["cgroup-parent"]; ok {
				t.Error("--cgroup-parent: the scenario nests sandboxes under the container's cgroup")
			}
			volume := ""
			mounts, _ := c["volumeMounts"].([]any)
			for _, m := range mounts {
				if dig(m, "mountPath") == "/sys/fs/cgroup" {
					volume, _ = dig(m, "name").(string)
					if dig(m, "readOnly") == true {
						t.Error("/sys/fs/cgroup is mounted read-only")
					}
				}
			}
			volumes, _ := pod["volumes"].([]any)
			for _, v := range volumes {
				if volume != "" && dig(v, "name") == volume {
					if p := dig(v, "hostPath", "path"); p != "/sys/fs/cgroup" {
						t.Errorf("volume %s is %v, want hostPath /sys/fs/cgroup", volume, p)
					}
					return
				}
			}
			t.Error("no hostPath volume mounted at /sys/fs/cgroup")
		})
	}
}
