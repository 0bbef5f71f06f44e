# description: kernel information in /proc is masked: kallsyms,
#   interrupts, timer_list, keys, kmsg, sched_debug, kcore, latency_stats
#   sysrq-trigger and locks read as empty (bound over by /dev/null) or are
#   absent, where the host's world-readable /proc/kallsyms,
#   /proc/interrupts and /proc/locks would give symbol names, the host's
#   interrupt layout and every lock of the host (device, inode, pid);
#   /proc/locks must be /dev/null itself, since a host holding no lock
#   reads as empty unmasked too.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: READABLE
# expect-stdout-contains: /proc/kallsyms: masked
# expect-stdout-contains: /proc/interrupts: masked
# expect-stdout-contains: /proc/timer_list: masked
# expect-stdout-contains: /proc/keys: masked
# expect-stdout-contains: /proc/locks: bound over by /dev/null
for f in kallsyms interrupts timer_list keys kmsg sched_debug kcore latency_stats timer_stats sysrq-trigger locks; do
  n=$(head -c 64 "/proc/$f" 2>/dev/null | wc -c)
  if [ "$n" -eq 0 ]; then echo "/proc/$f: masked"; else echo "/proc/$f: READABLE ($n bytes)"; fi
done
for d in acpi scsi asound; do
  if [ -n "$(ls -A "/proc/$d" 2>/dev/null)" ]; then echo "/proc/$d: READABLE"; else echo "/proc/$d: masked"; fi
done
[ -c /proc/locks ] && echo "/proc/locks: bound over by /dev/null"
