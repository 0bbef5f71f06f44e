# description: filling the workspace stops at the requested workspace size
#   (8 MiB) with ENOSPC.
# runtime: shell
# limits: workspace_bytes=8Mi timeout_ms=20000
# expect-state: COMPLETED
# expect-stderr-contains: No space left on device
# expect-stdout-contains: filled /workspace
# expect-stdout-matches: used KiB: [0-9]+
# expect-stdout-not-contains: without ENOSPC
cd /workspace
i=0
while head -c 1048576 /dev/zero > fill.$i; do
  i=$((i + 1))
  [ $i -lt 64 ] || { echo "/workspace took 64 MiB without ENOSPC"; exit 1; }
done
echo "filled /workspace after $i files"
used=$(du -sk /workspace | cut -f1)
echo "used KiB: $used"
[ "$used" -le 8192 ] || echo "workspace holds more than 8 MiB: without ENOSPC"
