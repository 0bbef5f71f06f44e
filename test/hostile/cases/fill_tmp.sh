# description: filling /tmp stops at the size of its tmpfs with ENOSPC; the
#   host's disk and the next execution are untouched.
# runtime: shell
# limits: timeout_ms=20000
# expect-state: COMPLETED
# expect-stderr-contains: No space left on device
# expect-stdout-contains: filled /tmp
# expect-stdout-matches: used MiB: (6[0-9]|70)\b
i=0
while head -c 8388608 /dev/zero > /tmp/fill.$i; do
  i=$((i + 1))
  [ $i -lt 64 ] || { echo "/tmp took 512 MiB without ENOSPC"; exit 1; }
done
echo "filled /tmp after $i files"
echo "used MiB: $(du -sm /tmp | cut -f1)"
