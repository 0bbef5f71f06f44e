# description: in a session sandbox, an upload larger than the workspace's
#   room ends RESOURCE_EXHAUSTED and leaves no partial file (it is written
#   to a hidden file renamed only at the end); the room is free again
#   afterwards.
# session: true
# limits: workspace_bytes=2Mi
# file: upload-zeros sub/big.bin 4Mi
# expect-file: RESOURCE_EXHAUSTED
# --- then ---
# file: stat sub/big.bin
# expect-file: ok
# expect-exists: false
# --- then ---
# runtime: shell
# expect-state: COMPLETED
# expect-stdout-contains: entries: 0
# expect-stdout-matches: (?m)^used: [0-9]{1,2}$
echo "entries: $(ls -A /workspace/sub | wc -l)"
echo "used: $(du -sk /workspace | cut -f1)"
# --- then ---
# file: upload-zeros sub/ok.bin 1Mi
# expect-file: ok
