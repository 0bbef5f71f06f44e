# description: a heap bomb that touches every page is OOM-killed inside its
#   cgroup's memory limit, reported as reason MEMORY.
# runtime: python
# limits: memory_bytes=128Mi timeout_ms=20000
# expect-state: FAILED
# expect-reason: MEMORY
# expect-stdout-not-contains: survived
chunks = []
while len(chunks) < 1024:  # 16 GiB, far beyond the limit
    chunks.append(bytearray(b"x" * (16 << 20)))
print("survived with", len(chunks) * 16, "MiB")
