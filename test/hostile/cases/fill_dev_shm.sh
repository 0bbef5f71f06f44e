# description: filling /dev/shm stops at the size of its tmpfs with ENOSPC.
# runtime: shell
# limits: timeout_ms=20000
# expect-state: COMPLETED
# expect-stderr-contains: No space left on device
# expect-stdout-contains: filled /dev/shm
# expect-stdout-matches: used MiB: (6[0-9]|70)\b
i=0
while head -c 8388608 /dev/zero > /dev/shm/fill.$i; do
  i=$((i + 1))
  [ $i -lt 64 ] || { echo "/dev/shm took 512 MiB without ENOSPC"; exit 1; }
done
echo "filled /dev/shm after $i files"
echo "used MiB: $(du -sm /dev/shm | cut -f1)"
