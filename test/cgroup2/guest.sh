#!/bin/sh
# Runs in the cgroup v2 test VM after init.sh, as root, on the host's root
# filesystem (read-only) with cgroup2 alone at /sys/fs/cgroup. It prepares
# each scenario's cgroup, as the deployment it stands for would, and runs
# scenario.sh there; then checks that doctor refuses a cgroup without
# delegation. Every result goes to the out share as NAME.log and NAME.rc;
# "done" marks the end. See test/cgroup2/README.md for the scenarios.
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
cd "$EXECFARM_REPO" || exit 1
out=$EXECFARM_OUT
cg=/sys/fs/cgroup
mkdir -p /run/lock
hostname execfarm-vm
busybox ip link set lo up
cat /proc/version > "$out/kernel"

# enable DIR: the controllers sandboxes need are given to DIR's children.
enable() { echo "+cpu +memory +pids" > "$1/cgroup.subtree_control"; }
# in CGROUP CMD...: run CMD in CGROUP (created as needed).
in_cgroup() {
  mkdir -p "$1"
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$@"
}

# The node runtime bundle (thousands of small files, all read at each node
# start) from a tmpfs copy: over 9p every one is a round trip to qemu.
bundle=$EXECFARM_REPO/runtime/node/bundle
if [ -d "$bundle/node_modules" ]; then
  mkdir -p /run/node-bundle && cp -a "$bundle/." /run/node-bundle/ && mount --bind /run/node-bundle "$bundle"
fi

enable "$cg"
for s in $(echo "$EXECFARM_SCENARIOS" | tr , ' '); do
  case "$s" in
  host-service)
    # A systemd service with Delegate=yes: its own cgroup below the root,
    # with memory, cpu and pids delegated to it.
    mkdir -p "$cg/system.slice/execfarm.service"
    enable "$cg/system.slice"
    in_cgroup "$cg/system.slice/execfarm.service" sh test/cgroup2/scenario.sh "$s" full
    ;;
  pod)
    # A pod's container as runc makes it on cgroup v2: a nested cgroup with
    # the controllers delegated, its own cgroup namespace, and cgroup2
    # mounted inside it (so rooted at the container's cgroup). The host's
    # mount goes first: the kernel refuses the same cgroup2 superblock on
    # the same mountpoint twice (EBUSY).
    mkdir -p "$cg/kubepods/pod-private/ctr"
    enable "$cg/kubepods"
    enable "$cg/kubepods/pod-private"
    in_cgroup "$cg/kubepods/pod-private/ctr" unshare --cgroup --mount --propagation private \
      sh -c 'umount -l /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec sh test/cgroup2/scenario.sh "$1" subset' sh "$s"
    ;;
  pod-hostns)
    # A privileged pod with the host's cgroup namespace (containerd and
    # CRI-O give privileged containers the host's) and the host's
    # /sys/fs/cgroup mounted, as deploy/base/daemonset.yaml does.
    mkdir -p "$cg/kubepods/pod-hostns/ctr"
    enable "$cg/kubepods"
    enable "$cg/kubepods/pod-hostns"
    in_cgroup "$cg/kubepods/pod-hostns/ctr" sh test/cgroup2/scenario.sh "$s" subset
    ;;
  *)
    echo "FAIL	cgroup2/$s: unknown scenario" > "$out/$s.log"; echo 1 > "$out/$s.rc"
    ;;
  esac
done

# A cgroup whose parent delegates only cpu: doctor must refuse and name
# the controllers that are not delegated.
mkdir -p "$cg/nodeleg/svc"
echo "+cpu" > "$cg/nodeleg/cgroup.subtree_control"
log=$out/zz-not-delegated.log
EXECFARM_WORKER=$EXECFARM_BIN/execfarm-worker in_cgroup "$cg/nodeleg/svc" "$EXECFARM_BIN/execfarm" doctor > "$log.tmp" 2>&1
rc=$?
sed 's/^/    /' "$log.tmp" > "$log"
rm -f "$log.tmp"
if [ "$rc" = 1 ] && grep -q 'memory, pids not in /sys/fs/cgroup/nodeleg/svc/cgroup.controllers' "$log"; then
  echo "ok  	cgroup2/not-delegated	doctor refuses (exit 1) and names the missing delegation" >> "$log"; echo 0 > "$out/zz-not-delegated.rc"
else
  echo "FAIL	cgroup2/not-delegated	doctor exit $rc, want 1 and a message naming memory, pids" >> "$log"; echo 1 > "$out/zz-not-delegated.rc"
fi
touch "$out/done"
sync
poweroff -f
