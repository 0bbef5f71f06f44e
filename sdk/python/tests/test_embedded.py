"""Embedded mode's lifecycle: what close and the parent's death leave."""

import glob
import os
import select
import signal
import subprocess
import sys

import pytest

import execfarm

CHILD = """
import sys, execfarm
ef = execfarm.connect(spawn=True)
e = ef.embedded
print(e.proc.pid, e.dir, e.cgroup_parent, flush=True)
try:
    sys.stdin.read()
finally:
    ef.close()
"""


def wait_exit(pid: int, timeout: float) -> bool:
    """Waits (on a pidfd, not by polling) until pid has exited."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def cgroups(name: str) -> list[str]:
    return glob.glob(f"/sys/fs/cgroup/**/{name}", recursive=True)


def test_close_leaves_nothing(binary):
    ef = execfarm.connect(spawn=True, binary=binary)
    e = ef.embedded
    pid, d, cg = e.proc.pid, e.dir, e.cgroup_parent.lstrip("/")
    assert ef.run("echo hi", runtime="shell").stdout == "hi\n"
    ef.close()
    assert wait_exit(pid, 0)
    assert not os.path.exists(d)
    assert cgroups(cg) == []
    ef.close()  # idempotent


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_parent_death_stops_serve(binary, sig):
    env = dict(os.environ, EXECFARM_BIN=binary, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = p.stdout.readline().split()
        assert len(line) == 3, "the child did not start its embedded supervisor"
        pid, d, cg = int(line[0]), line[1], line[2].lstrip("/")
        p.send_signal(sig)
        p.wait(30)
        # SIGKILL and SIGTERM run no Python clean-up: serve ends by its
        # parent-death signal and removes its cgroups itself.
        assert wait_exit(pid, 20), f"execfarm serve {pid} outlived its parent ({sig!r})"
        assert cgroups(cg) == []
        if sig == signal.SIGINT:
            assert not os.path.exists(d)
    finally:
        p.kill()
        p.wait()
