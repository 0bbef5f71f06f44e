#!/usr/bin/env bash
# make test-cgroup2: runs execfarm's suites on a real, pure cgroup v2
# kernel. Boots the distribution's kernel (Debian's linux-image-amd64) in
# qemu under TCG, with this host's root filesystem shared read-only over
# 9p and tmpfs over the few paths the suites write, and runs, as root in
# the VM, the cgroup package's tests, the integration suite and the
# hostile-program suite in each scenario of guest.sh. The test binaries
# and the execfarm binaries are built here, on the host. The results are
# printed as `go test` prints them; the exit status is the suites'.
#
# Environment (all optional):
#   CGROUP2_KERNEL     kernel image (default: the newest /boot/vmlinuz-*)
#   CGROUP2_MEM        VM memory (default 4G)
#   CGROUP2_CPUS       VM CPUs (default: the host's, at most 4)
#   CGROUP2_SCENARIOS  scenarios to run (default: "host-service pod pod-hostns")
#   CGROUP2_RUN        -test.run pattern for every suite (default: all tests)
#   CGROUP2_TIMEOUT    wall-clock bound of the whole VM run (default 60m)
#   CGROUP2_KEEP       keep the work directory (binaries, logs) when set
#   EXECFARM_TIME_SCALE  factor of the suites' timing assertions in the VM
#                      (default 10: TCG runs programs 5-30 times slower)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

kernel=${CGROUP2_KERNEL:-$(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)}
[ -n "$kernel" ] && [ -r "$kernel" ] || { echo "test-cgroup2: no kernel image in /boot (apt-get install linux-image-amd64)"; exit 1; }
kver=${kernel##*/vmlinuz-}
moddir=/lib/modules/$kver
[ -d "$moddir" ] || { echo "test-cgroup2: no modules for $kver in $moddir"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "test-cgroup2: qemu-system-x86_64 missing (apt-get install qemu-system-x86)"; exit 1; }
# A static busybox (busybox-static): the initramfs has no libc.
busybox=/bin/busybox
[ -x "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 || { echo "test-cgroup2: no static $busybox (apt-get install busybox-static)"; exit 1; }
command -v cpio >/dev/null || { echo "test-cgroup2: cpio missing (apt-get install cpio)"; exit 1; }

# Everything the VM needs from the host lives in one directory that the
# guest sees at the same path (the host root is shared whole, read-only).
work=$(mktemp -d /tmp/execfarm-cgroup2-XXXXXX)
chmod 0755 "$work"
trap '[ -n "${CGROUP2_KEEP:-}" ] || rm -rf "$work"' EXIT
bin=$work/bin
out=$work/out
mkdir -p "$bin" "$out"

echo "test-cgroup2: building binaries"
go build -o "$bin/" ./cmd/execfarm ./cmd/execfarm-worker ./cmd/execfarm-goja
chmod 0755 "$bin" "$bin"/*
go test -c -o "$bin/cgroup.test" ./isolation/cgroup
go test -c -o "$bin/integration.test" ./test/integration
go test -c -o "$bin/hostile.test" ./test/hostile
make -s bundle >/dev/null

# The initramfs: a static busybox, the modules that reach the 9p share
# (Debian's kernel builds virtio and 9p as modules), and init.
initrd=$work/initrd
mkdir -p "$initrd/bin" "$initrd/lib/modules" "$initrd/proc" "$initrd/sys" "$initrd/dev" "$initrd/newroot"
cp "$busybox" "$initrd/bin/busybox"
: > "$initrd/modules"
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p; do
  f=$(modinfo -k "$kver" -n "$m" 2>/dev/null || true)
  [ -n "$f" ] || continue # built in
  case "$f" in
    *.ko) cp "$f" "$initrd/lib/modules/$m.ko" ;;
    *.ko.xz) xz -dc "$f" > "$initrd/lib/modules/$m.ko" ;;
    *.ko.zst) zstd -qdc "$f" > "$initrd/lib/modules/$m.ko" ;;
    *.ko.gz) gzip -dc "$f" > "$initrd/lib/modules/$m.ko" ;;
    *) continue ;;
  esac
  echo "$m" >> "$initrd/modules"
done
cp test/cgroup2/init.sh "$initrd/init"
chmod 0755 "$initrd/init"
(cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

mem=${CGROUP2_MEM:-4G}
cpus=${CGROUP2_CPUS:-$(nproc)}
[ "$cpus" -gt 4 ] && cpus=4
scenarios=${CGROUP2_SCENARIOS:-host-service pod pod-hostns}
start=$(date +%s)
echo "test-cgroup2: booting $kernel (qemu TCG, $cpus CPUs, $mem) for: $scenarios"
# multidevs=remap: the host's root holds other file systems' mountpoints
# (/proc, /sys, ...), whose inode numbers would collide in the guest.
# /dev/kvm cannot run a stock kernel here (it fails on model-specific
# registers), so TCG; -cpu max gives the guest every feature TCG has.
set +e
timeout --foreground "${CGROUP2_TIMEOUT:-60m}" qemu-system-x86_64 \
  -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$mem" \
  -nographic -no-reboot -serial file:"$out/console.log" -monitor none \
  -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1 cgroup_no_v1=all EXECFARM_REPO=$repo EXECFARM_BIN=$bin EXECFARM_OUT=$out EXECFARM_SCENARIOS=${scenarios// /,} EXECFARM_RUN=${CGROUP2_RUN:-} EXECFARM_TIME_SCALE=${EXECFARM_TIME_SCALE:-10}" \
  -fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
  -device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
  -fsdev local,id=out,path="$out",security_model=none \
  -device virtio-9p-pci,fsdev=out,mount_tag=out \
  >/dev/null 2>"$work/qemu.err"
qemu=$?
set -e
elapsed=$(( $(date +%s) - start ))
# guest.sh writes one SUITE.log and SUITE.rc per suite and scenario, and
# done when it got to its end.
status=0
for log in "$out"/*.log; do
  name=$(basename "$log" .log)
  [ "$name" = console ] && continue
  rc=$(cat "$out/$name.rc" 2>/dev/null || echo missing)
  cat "$log"
  if [ "$rc" != 0 ]; then status=1; fi
done
if [ ! -e "$out/done" ]; then
  echo "test-cgroup2: the VM did not finish (qemu exit $qemu after ${elapsed}s); console:"
  tail -50 "$out/console.log" || true
  cat "$work/qemu.err" || true
  status=1
fi
echo "test-cgroup2: VM stage took ${elapsed}s"
exit $status
