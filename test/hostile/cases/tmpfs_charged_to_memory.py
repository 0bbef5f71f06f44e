# description: tmpfs pages are charged to the sandbox's memory: with 20 MiB
#   of files in the workspace (of 23.6 MiB, fitted to the 64 MiB limit), a
#   40 MiB allocation that fits the limit without them ends in an OOM kill
#   (reason MEMORY), not in host memory the limit does not see. Files alone
#   cannot reach the limit (fill_*.sh; integration TestFilesCannotFillMemory).
# runtime: python
# limits: memory_bytes=64Mi timeout_ms=20000
# expect-state: FAILED
# expect-reason: MEMORY
# expect-stdout-contains: WROTE 20 MiB
# expect-stdout-not-contains: ALLOCATED
import sys
chunk = b"\0" * (1 << 20)
with open("/workspace/fill", "wb") as f:
    for _ in range(20):
        f.write(chunk)
del chunk
print("WROTE 20 MiB", flush=True)
held = b"\1" * (40 << 20)  # every page written
print("ALLOCATED 40 MiB beside the files")
sys.stdout.flush()
