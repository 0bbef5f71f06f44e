#!/bin/busybox sh
# PID 1 of the cgroup v2 test VM (test/cgroup2/run.sh puts it in the
# initramfs with a static busybox and the virtio and 9p modules). It
# mounts the host's root filesystem, shared read-only over 9p, as the new
# root with tmpfs over the paths the suites write (and a copy of /etc), the
# out share, and
# cgroup2 alone at /sys/fs/cgroup, then runs guest.sh from the
# repository. The kernel passes EXECFARM_* from its command line as
# environment.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "init: $*" > /dev/console; poweroff -f; }
for m in $(cat /modules); do
  insmod "/lib/modules/$m.ko" || fail "insmod $m"
done
# msize: 9p moves at most this much per message; the default (8 KiB) makes
# reading the test binaries slow.
opts=trans=virtio,version=9p2000.L,msize=524288
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot || fail "mount the host root"
work=$(dirname "$EXECFARM_BIN")
mkdir -p /keep && mount --bind "/newroot$work" /keep || fail "bind $work"
# /etc: a writable copy (the suites plant files there, as on a host).
mkdir -p /hostetc && mount --bind /newroot/etc /hostetc || fail "bind /etc"
mount -t tmpfs -o mode=0755 tmpfs /newroot/etc && cp -a /hostetc/. /newroot/etc/ || fail "copy /etc"
umount /hostetc
for d in tmp var/tmp run root; do
  mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d" || fail "tmpfs on /$d"
done
chmod 0700 /newroot/root
mkdir -p "/newroot$work" && mount --move /keep "/newroot$work" || fail "move $work"
mount -t 9p -o "$opts" out "/newroot$EXECFARM_OUT" || fail "mount the out share"
mount -t proc proc /newroot/proc || fail "mount /proc"
mount -t sysfs sysfs /newroot/sys || fail "mount /sys"
mount --move /dev /newroot/dev || fail "move /dev"
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
# cgroup v2 alone, as systemd mounts it (nsdelegate: cgroup namespaces are
# delegation boundaries).
mount -t cgroup2 -o nsdelegate cgroup2 /newroot/sys/fs/cgroup || fail "mount cgroup2"
exec switch_root /newroot /bin/sh "$EXECFARM_REPO/test/cgroup2/guest.sh"
