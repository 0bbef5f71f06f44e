# description: tmpfs pages are charged to the sandbox's memory: writing 60
#   MiB into a 64 MiB workspace under a 32 MiB memory limit ends in an OOM
#   kill (reason MEMORY), not in host memory the limit does not see.
# runtime: shell
# limits: memory_bytes=32Mi workspace_bytes=64Mi timeout_ms=10000
# expect-state: FAILED
# expect-reason: MEMORY
# expect-stdout-not-contains: WRITTEN
dd if=/dev/zero of=/workspace/fill bs=1M count=60 2>/dev/null && echo "60 MiB WRITTEN"
