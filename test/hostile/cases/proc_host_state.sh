# description: /proc entries that tell about the host rather than the
#   sandbox are masked: /proc/pressure (the host's CPU, memory and I/O
#   stall figures, which follow other sandboxes' activity), /proc/config.gz
#   (the kernel's build configuration) and the host's boot_id
#   (/proc/sys/kernel/random/boot_id, one identity for every sandbox of a
#   boot) read as empty.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-not-contains: READABLE
# expect-stdout-matches: (?m)^/proc/pressure: masked$
# expect-stdout-matches: (?m)^/proc/pressure/cpu: masked$
# expect-stdout-matches: (?m)^/proc/pressure/memory: masked$
# expect-stdout-matches: (?m)^/proc/pressure/io: masked$
# expect-stdout-matches: (?m)^/proc/config.gz: masked$
# expect-stdout-matches: (?m)^/proc/sys/kernel/random/boot_id: masked$
if [ -n "$(ls -A /proc/pressure 2>/dev/null)" ]; then echo "/proc/pressure: READABLE"; else echo "/proc/pressure: masked"; fi
for f in pressure/cpu pressure/memory pressure/io config.gz sys/kernel/random/boot_id; do
  n=$(head -c 64 "/proc/$f" 2>/dev/null | wc -c)
  if [ "$n" -eq 0 ]; then echo "/proc/$f: masked"; else echo "/proc/$f: READABLE ($n bytes)"; fi
done
