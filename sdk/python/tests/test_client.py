"""The client against a real execfarm serve."""

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import execfarm
from execfarm import errors

HERE = Path(__file__).resolve().parent
README = HERE.parent / "examples" / "readme.py"
README_OUT = "0 42\n exited\nHELLO0 b'hello'\n"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SANDBOX_") and k not in ("EXECFARM_TOKEN", "EXECFARM_TOKEN_FILE")}
    env.update(extra)
    return env


def test_readme_embedded(binary):
    # Nothing configured: connect() starts its own serve and stops it.
    p = subprocess.run([sys.executable, str(README)], env=clean_env(EXECFARM_BIN=binary),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == README_OUT


def test_readme_server_mode(server, tmp_path):
    tok = tmp_path / "token"
    tok.write_text(server.token + "\n")
    p = subprocess.run([sys.executable, str(README)],
                       env=clean_env(SANDBOX_SOCKET_PATH=server.socket, EXECFARM_TOKEN_FILE=str(tok),
                                     EXECFARM_BIN="/nonexistent"),  # server mode never spawns
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == README_OUT


def test_run_result(ef):
    chunks: list[str] = []
    r = ef.run("import os,sys; print(os.environ['A'], sys.stdin.read()); print('e', file=sys.stderr); sys.exit(3)",
               runtime="python", env={"A": "x"}, stdin="in", on_stdout=chunks.append, memory=256 << 20)
    assert (r.exit_code, r.stdout, r.stderr, r.termination_reason, r.state) == (3, "x in\n", "e\n", "exited", "failed")
    assert "".join(chunks) == "x in\n"
    assert r.execution_id and not r.stdout_truncated
    assert r.effective_limits.max_memory_bytes == 256 << 20


def test_run_timeout_and_truncation(ef):
    r = ef.run("sleep 5", runtime="shell", timeout=0.5)
    assert r.termination_reason == "timeout"
    r = ef.run("head -c 100000 /dev/zero", runtime="shell", output_limit=1000)
    assert r.stdout_truncated and len(r.stdout.encode()) <= 1000


def test_callback_error_cancels(ef):
    class Stop(Exception):
        pass

    def cb(_: str) -> None:
        raise Stop

    with pytest.raises(Stop):
        ef.run("echo a; sleep 30", runtime="shell", on_stdout=cb)


def test_stdout_reaches_callback_before_exit(sbx):
    # The program prints, then waits until the test writes the file "go":
    # the chunk must arrive while it still runs, or the exec never ends.
    seen = threading.Event()
    order: list[str] = []

    def on_stdout(chunk: str) -> None:
        order.append(chunk)
        if "ready" in chunk and not seen.is_set():
            seen.set()
            sbx.files.write("go", b"1")

    out = sbx.exec("echo ready; while [ ! -e go ]; do sleep 0.01; done; echo done",
                   timeout=20, on_stdout=on_stdout)
    assert seen.is_set()
    assert out.termination_reason == "exited", out
    assert "".join(order) == "ready\ndone\n"
    assert order[0] == "ready\n"


def test_files(sbx):
    big = os.urandom((1 << 20) + 3)  # several upload and download chunks
    assert sbx.files.write("d/big.bin", io.BytesIO(big)) == len(big)
    assert sbx.files.read("d/big.bin") == big
    sbx.files.write("d/t.txt", "héllo")
    assert sbx.files.read_text("d/t.txt") == "héllo"
    assert sorted(f.name for f in sbx.files.list("d")) == ["big.bin", "t.txt"]
    info = sbx.files.stat("d/big.bin")
    assert info is not None and info.size == len(big) and info.type == "file"
    sbx.files.mkdir("e/f", parents=True)
    assert sbx.files.exists("e/f")
    sbx.files.remove("d", recursive=True)
    assert not sbx.files.exists("d")
    with pytest.raises(errors.FileNotFound) as ei:
        sbx.files.read("d/big.bin")
    assert ei.value.code == "NOT_FOUND" and ei.value.reason == "FILE_NOT_FOUND" and ei.value.message


def test_exec_bytes_cwd_env(sbx):
    sbx.files.mkdir("w")
    out = sbx.exec("pwd; printf '\\377'; echo $X >&2; exit 4", cwd="w", env={"X": "y"})
    assert out.exit_code == 4 and out.stdout_bytes == b"/workspace/w\n\xff" and out.stderr == "y\n"
    assert out.stdout == "/workspace/w\n\ufffd"


def test_sandbox_lifecycle(ef):
    with ef.create_sandbox(runtime="shell", ttl=60, labels={"life": "cycle"}) as s:
        assert [x.id for x in ef.list_sandboxes({"life": "cycle"})] == [s.id]
        assert ef.sandbox(s.id).id == s.id
        assert s.status().ready
    # Deleted on leaving the with block.
    assert ef.list_sandboxes({"life": "cycle"}) == []
    with pytest.raises(errors.SandboxNotFound):
        ef.sandbox(s.id)
    with pytest.raises(errors.SandboxNotFound) as ei:
        s.exec("true")
    assert ei.value.reason == "SANDBOX_NOT_FOUND"


def test_invalid_argument_names_field(ef):
    with pytest.raises(errors.InvalidArgument) as ei:
        ef.run("print(1)", runtime="python", memory="1Ti")
    e = ei.value
    assert e.field == "limits.max_memory_bytes" and e.reason == "LIMIT_OUT_OF_RANGE" and "memory" in e.message
    assert isinstance(e, execfarm.ExecfarmError)


def test_unauthenticated(server):
    with execfarm.connect(server.target, token="wrong-token-wrong-token") as c:
        with pytest.raises(errors.Unauthenticated) as ei:
            c.run("true", runtime="shell")
    assert "bearer token" in ei.value.message


def test_unreachable(tmp_path):
    with execfarm.connect("unix:" + str(tmp_path / "none.sock")) as c:
        with pytest.raises(errors.Unreachable) as ei:
            c.health()
    assert str(tmp_path) in ei.value.message and ei.value.code == "UNAVAILABLE"


def test_embedded_needs_root(binary):
    code = "import execfarm\ntry:\n    execfarm.connect(spawn=True)\nexcept execfarm.errors.EmbeddedUnavailable as e:\n    print(e.message)\n"
    p = subprocess.run([sys.executable, "-c", code], env=clean_env(EXECFARM_BIN=binary, PYTHONPATH=os.pathsep.join(sys.path)),
                       capture_output=True, text=True, timeout=30, user=65534, group=65534)
    assert p.returncode == 0, p.stderr
    assert "needs root" in p.stdout and "SANDBOX_SOCKET_PATH" in p.stdout
