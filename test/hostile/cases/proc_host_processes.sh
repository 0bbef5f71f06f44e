# description: /proc shows the sandbox's own few processes only: no host
#   process (the supervisor's test binary, the host's init) is visible.
#   Names come from /proc/PID/comm; command lines would contain this very
#   program's text.
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-matches: (?m)^processes: [1-6]$
# expect-stdout-matches: (?m)^1 \S+$
# expect-stdout-not-contains: hostile.test
# expect-stdout-not-contains: systemd
# expect-stdout-not-contains: init
n=0
for d in /proc/[0-9]*; do
  n=$((n + 1))
  echo "${d#/proc/} $(cat "$d/comm" 2>/dev/null)"
done
echo "processes: $n"
