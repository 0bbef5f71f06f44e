# description: kernel knobs are out of reach: /proc/sysrq-trigger, /proc/sys
#   and /sys cannot be written (and /sys is not even there).
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: WRITTEN
# expect-stdout-matches: (?m)^/proc/sysrq-trigger: (refused|masked)$
# expect-stdout-contains: /proc/sys/kernel/hostname: refused
# expect-stdout-contains: /sys/kernel/mm/transparent_hugepage/enabled: refused
for f in /proc/sysrq-trigger /proc/sys/kernel/hostname /proc/sys/vm/drop_caches \
         /proc/sys/kernel/core_pattern /sys/kernel/mm/transparent_hugepage/enabled \
         /sys/fs/cgroup/cgroup.procs /proc/1/oom_score_adj; do
  # A masked entry is the host's /dev/null bound over it (runc's mask):
  # a write there succeeds and goes nowhere. /proc/sysrq-trigger exists
  # only on kernels built with magic SysRq (Debian's are; this host's
  # may not be).
  if [ -c "$f" ] && [ "$(stat -c %t:%T "$f")" = 1:3 ]; then echo "$f: masked"; continue; fi
  if (printf 'x' > "$f") 2>/dev/null; then echo "$f: WRITTEN"; else echo "$f: refused"; fi
done
ls /sys 2>&1 | head -3
