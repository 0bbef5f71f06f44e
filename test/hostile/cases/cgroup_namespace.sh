# description: the sandbox's cgroup namespace is rooted at its own cgroup:
#   /proc/self/cgroup shows "/" for every controller, never the host's
#   cgroup layout (the suite's parent, the sandbox id), and the cgroup
#   hierarchy itself is not mounted inside.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: execfarm
# expect-stdout-not-contains: sb-
# expect-stdout-contains: /sys/fs/cgroup: absent
cat /proc/self/cgroup
[ -e /sys/fs/cgroup ] && echo "/sys/fs/cgroup: PRESENT" || echo "/sys/fs/cgroup: absent"
