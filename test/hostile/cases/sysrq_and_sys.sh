# description: kernel knobs are out of reach: /proc/sysrq-trigger, /proc/sys
#   and /sys cannot be written (and /sys is not even there).
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: WRITTEN
# expect-stdout-contains: /proc/sysrq-trigger: refused
# expect-stdout-contains: /proc/sys/kernel/hostname: refused
# expect-stdout-contains: /sys/kernel/mm/transparent_hugepage/enabled: refused
for f in /proc/sysrq-trigger /proc/sys/kernel/hostname /proc/sys/vm/drop_caches \
         /proc/sys/kernel/core_pattern /sys/kernel/mm/transparent_hugepage/enabled \
         /sys/fs/cgroup/cgroup.procs /proc/1/oom_score_adj; do
  if (printf 'x' > "$f") 2>/dev/null; then echo "$f: WRITTEN"; else echo "$f: refused"; fi
done
ls /sys 2>&1 | head -3
