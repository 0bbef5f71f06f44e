# description: in a session sandbox, an exec's memory bomb is OOM-killed
#   (its result says so: reason MEMORY, SIGKILL) and the sandbox goes on:
#   its worker, its files and its other execs outlive the kill (on cgroup
#   v2 the sandbox's cgroup has no memory.oom.group, which would kill them
#   all).
# session: true
# limits: memory_bytes=96Mi
# runtime: shell
# expect-state: COMPLETED
echo kept > /workspace/kept.txt
# --- then ---
# runtime: python
# expect-state: FAILED
# expect-reason: MEMORY
# expect-signal: 9
b = bytearray(512 << 20)
print("allocated", len(b))
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: still here: kept
echo "still here: $(cat /workspace/kept.txt)"
