"""Lowering workers: forked from one TileLang import, kept between builds when asked
(``tlstages_keep_workers``), never trusted across keys, never a reason for a build to
hang or fail. Every build here lowers for real."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sphinx_tlstages.cli import main as cli
from sphinx_tlstages.core.protocol import wire
from sphinx_tlstages.core.protocol.messages import Hello, Refused, ServerStatus, Unavailable
from sphinx_tlstages.core.results.stamps import lowering_stamp, tilelang_stamp
from sphinx_tlstages.runner import kept
from sphinx_tlstages.runner.launch import worker_environment

from .conftest import CONF, Built, write_project
from .kernels import GEMM, GEMM_PARAMS, rst

KEEP = {"tlstages_keep_workers": 120}
HEAD = "Workers\n=======\n\n"


def page(m: int = 1024, stages: str = "2", kernel: str = GEMM, **extra: str) -> str:
    return HEAD + rst(kernel, num_stages=stages, params=GEMM_PARAMS.replace(
        "M=1024", f"M={m}"), name="gemm", **extra)


def shapes(built: Built) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in built.table("tl-shared")}


def one_server() -> tuple[Path, ServerStatus]:
    found = [(path, answer) for path, answer in kept.servers() if answer is not None]
    assert len(found) == 1, found
    path, answer = found[0]
    assert answer is not None
    return path, answer


def gone(pid: int, within: float = 20.0) -> bool:
    """Whether process ``pid`` ends within ``within`` seconds (a kept server started by
    a build in this process is this process's child: reaped here, not by init)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(autouse=True)
def no_kept_servers() -> None:
    """Each test starts with no kept server (the session's folder is shared)."""
    for path, answer in kept.servers():
        kept.stop(path)
        if answer is not None:
            gone(int(answer.pid))


def test_a_kept_server_is_reused_by_the_next_build(build, tmp_path, own_cache) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": page()}, srcdir=src, confoverrides=KEEP)
    assert "1 lowered, 0 cached" in first.status
    assert "workers reused" not in first.status
    path, status = one_server()
    # The build has ended; the server and its TileLang import have not.
    assert path.stem == status.key and not gone(int(status.pid), within=1)
    edited = build({"index.rst": page(m=2048)}, srcdir=src, confoverrides=KEEP)
    assert "1 lowered, 0 cached" in edited.status
    assert f"kept TileLang workers reused (server pid {status.pid}," in edited.status
    assert "no TileLang import" in edited.status
    assert shapes(edited)["A_shared"][0].startswith("(2, 128, 64) float16")
    assert one_server()[1].served == 2


def test_workers_forked_for_one_build_serve_it_alone(build, tmp_path, own_cache) -> None:
    # Several variants, one fork each; a later build forks fresh workers: none of a
    # kernel's modules outlives the build that loaded it.
    src = tmp_path / "src"
    build({"index.rst": page(stages="2 3")}, srcdir=src, confoverrides=KEEP)
    again = build({"index.rst": page(m=2048, stages="2 3")}, srcdir=src, confoverrides=KEEP)
    assert "2 lowered" in again.status
    status = one_server()[1]
    assert status.forked == 4 and status.workers == 0


def test_a_server_keyed_differently_is_never_used(build, tmp_path, own_cache,
                                                  monkeypatch) -> None:
    src = tmp_path / "src"
    build({"index.rst": page()}, srcdir=src, confoverrides=KEEP)
    first_path, first = one_server()
    # An environment variable that reaches TileLang: another key, another server.
    monkeypatch.setenv("TL_SOME_PASS_FLAG", "1")
    other = build({"index.rst": page(m=2048)}, srcdir=src, confoverrides=KEEP)
    assert "1 lowered" in other.status and "workers reused" not in other.status
    servers = {path.stem: answer for path, answer in kept.servers()}
    assert len(servers) == 2 and first_path.stem in servers
    # Asked with another key, the first server refuses and hangs up.
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.connect(str(first_path))
        sock.settimeout(60)
        wire.send_packet(sock, Hello("0" * kept.KEY_LENGTH))
        answer, _ = wire.recv_packet(sock)
        assert answer == Refused("keyed differently")
        assert wire.recv_packet(sock) == (None, [])
    assert first is not None and first.describe


def test_the_key_covers_what_results_depend_on() -> None:
    env = worker_environment()
    stamps = {"lowering": lowering_stamp(), "tilelang": tilelang_stamp() or "missing"}
    base = kept.pool_key(kept.key_parts(env, stamps, []))
    variants = [
        kept.key_parts(env, {**stamps, "lowering": "0" * 16}, []),  # an edited extension
        kept.key_parts(env, {**stamps, "tilelang": "0.1.16+x"}, []),  # a TileLang upgrade
        kept.key_parts(env, stamps, ["/elsewhere"]),  # tlstages_python_path
        kept.key_parts({**env, "PYTHONPATH": "/other"}, stamps, []),  # the import path
        kept.key_parts({**env, "TVM_LIBRARY_PATH": "/x"}, stamps, []),
    ]
    assert len({base, *(kept.pool_key(parts) for parts in variants)}) == 6
    # What cannot reach a worker does not split pools.
    assert kept.pool_key(kept.key_parts({**env, "TERM": "dumb"}, stamps, [])) == base


def test_a_server_of_other_code_refuses_to_lower(tmp_path) -> None:
    # A server started for code other than what it finds on disk (the extension was
    # edited while it started) answers that it cannot serve, and exits.
    env = worker_environment()
    stamps = {"lowering": "0" * 16, "tilelang": tilelang_stamp() or "missing"}
    server = kept.reach(kept.key_parts(env, stamps, []), stamps, env, 60)
    try:
        server.sock.settimeout(120)
        answer = server.read()
        assert isinstance(answer, Unavailable)
        assert "stale: the lowering code changed on disk" in answer.message
    finally:
        server.close()


def test_a_dead_kept_server_is_replaced(build, tmp_path, own_cache) -> None:
    src = tmp_path / "src"
    build({"index.rst": page()}, srcdir=src, confoverrides=KEEP)
    _, status = one_server()
    os.kill(int(status.pid), signal.SIGKILL)
    assert gone(int(status.pid))
    again = build({"index.rst": page(m=2048)}, srcdir=src, confoverrides=KEEP)
    assert "1 lowered, 0 cached, 0 failed" in again.status and "workers reused" not in again.status
    assert one_server()[1].pid != status.pid


# Kills the fork server it was forked from (never a spawned worker's parent, which is
# Sphinx itself), then itself: the server dies under a build with a variant in hand.
KILLS_ITS_SERVER = GEMM.replace('    dtype = "float16"\n', '''    dtype = "float16"
    if num_stages == 2:
        import os, signal
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
            if b"--serve" in handle.read():
                os.kill(os.getppid(), signal.SIGKILL)
                os.kill(os.getpid(), signal.SIGKILL)
''')


@pytest.mark.parametrize("keep", [KEEP, {}], ids=["kept", "own"])
def test_a_server_dying_mid_build_falls_back_to_spawned_workers(build, tmp_path, own_cache,
                                                                keep) -> None:
    src = tmp_path / "src"
    result = build({"index.rst": page(stages="2 3", kernel=KILLS_ITS_SERVER)}, srcdir=src,
                   confoverrides=keep)
    assert "2 lowered, 0 cached, 0 failed" in result.status
    assert "workers spawned instead of forked: the fork server went away" in result.status
    assert "[tlstages.lowering]" not in result.warnings
    assert shapes(result)["A_shared"] == ["(2, 128, 64) float16, 32,768 B",
                                          "(3, 128, 64) float16, 49,152 B"]


HANGS = GEMM.replace('    dtype = "float16"\n',
                     '    dtype = "float16"\n    if num_stages == 2:\n'
                     '        import time; time.sleep(600)\n')


def test_a_hanging_kept_worker_is_killed_and_the_server_serves_on(build, tmp_path,
                                                                  own_cache) -> None:
    src = tmp_path / "src"
    result = build({"index.rst": page(stages="2 3", kernel=HANGS, timeout="4")},
                   srcdir=src, confoverrides={**KEEP, "tlstages_jobs": 1})
    assert "gemm: num_stages=2 failed to lower (timeout)" in result.warnings
    rows = {row[0]: row for row in result.table("tl-summary")[1:]}
    assert rows["3"][1] == "pipelined, depth 3"
    _, status = one_server()
    assert status.workers == 0  # the hung fork is gone, killed and reaped
    again = build({"index.rst": page(m=2048)}, srcdir=src, confoverrides=KEEP)
    assert "kept TileLang workers reused" in again.status


def test_two_builds_at_once_each_get_their_own_answers(tmp_path, own_cache) -> None:
    env = {**os.environ, "TLSTAGES_KEEP_WORKERS": "120", "TLSTAGES_SNAPSHOTS": "off"}
    books = {}
    for m, stages in ((1024, "2 3"), (2048, "3 4")):
        src = tmp_path / f"book{m}"
        write_project(src, {"index.rst": page(m=m, stages=stages)}, CONF)
        books[m] = src
    # A server first, so that both builds reach the same one at once.
    write_project(tmp_path / "warmup", {"index.rst": page(m=512)}, CONF)
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html",
                    str(tmp_path / "warmup"), str(tmp_path / "warmup-out")], env=env,
                   check=True)
    procs = {m: subprocess.Popen([sys.executable, "-m", "sphinx", "-b", "html", str(src),
                                  str(src / "out")], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
             for m, src in books.items()}
    logs = {m: proc.communicate(timeout=600)[0] for m, proc in procs.items()}
    assert all(proc.returncode == 0 for proc in procs.values()), logs
    for log in logs.values():
        assert "kept TileLang workers reused" in log, log
        assert "2 lowered, 0 cached, 0 failed" in log, log
    first = (books[1024] / "out" / "index.html").read_text(encoding="utf-8")
    second = (books[2048] / "out" / "index.html").read_text(encoding="utf-8")
    assert "(2, 128, 64)" in first and "(4, 128, 64)" not in first
    assert "(4, 128, 64)" in second and "(2, 128, 64)" not in second
    assert one_server()[1].served == 3


# Keeps 700 MB alive in the worker after its variant, as a leaking kernel would.
LEAKS = GEMM.replace('    dtype = "float16"\n',
                     '    dtype = "float16"\n    if num_stages == 2:\n'
                     '        import builtins\n'
                     '        setattr(builtins, "tlstages_test_leak", bytearray(700 << 20))\n')


@pytest.mark.parametrize("keep", [KEEP, {}], ids=["kept", "own"])
def test_a_worker_whose_memory_grew_is_replaced(build, tmp_path, own_cache, keep) -> None:
    src = tmp_path / "src"
    result = build({"index.rst": page(stages="2 3", kernel=LEAKS)}, srcdir=src,
                   confoverrides={**keep, "tlstages_jobs": 1})
    assert "2 lowered, 0 cached, 0 failed" in result.status, result.status + result.warnings
    assert "1 workers retired after their memory grew past the mark" in result.status


def test_workers_status_and_stop(build, tmp_path, own_cache, capsys) -> None:
    src = tmp_path / "src"
    build({"index.rst": page()}, srcdir=src, confoverrides=KEEP)
    path, status = one_server()
    folder = path.parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # this user's alone
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(os.fsencode(path)) <= kept.SOCKET_PATH_MAX
    assert cli(["workers", "status"]) == 0
    shown = capsys.readouterr().out
    assert f"{status.key}: pid {status.pid}, " in shown
    assert f"lowering code: {lowering_stamp()}" in shown
    assert cli(["workers", "stop"]) == 0
    assert f"{status.key}: stopped" in capsys.readouterr().out
    assert gone(int(status.pid))
    assert not path.exists()
    assert cli(["workers", "status"]) == 0
    assert "no kept lowering workers" in capsys.readouterr().out


def test_no_private_socket_folder_means_the_build_keeps_nothing(build, tmp_path, own_cache,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("TLSTAGES_WORKERS_DIR", str(tmp_path / ("x" * 120)))
    with pytest.raises(kept.KeptUnavailable):
        kept.socket_folder()
    result = build({"index.rst": page()}, srcdir=tmp_path / "src", confoverrides=KEEP,
                   verbosity=1)
    assert "1 lowered, 0 cached, 0 failed" in result.status
    assert "no kept workers (no private folder" in result.status


def test_strict_builds_keep_nothing(build, tmp_path, own_cache, monkeypatch) -> None:
    monkeypatch.setenv("READTHEDOCS", "True")
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "off")
    result = build({"index.rst": page()}, srcdir=tmp_path / "src", confoverrides=KEEP)
    assert "1 lowered" in result.status
    assert kept.servers() == []



_IMPORT_PROBE = """
import gc, sys
collections = []
gc.callbacks.append(lambda phase, info: collections.append(1) if phase == "start" else None)
if sys.argv[1] == "off":
    gc.disable()
from sphinx_tlstages.worker.tasks import import_tilelang
collections.clear()  # those of this module's own import
_, unavailable = import_tilelang()
print(unavailable, len(collections), gc.isenabled(), gc.get_freeze_count() > 100_000)
"""


@pytest.mark.parametrize("before", ["on", "off"])
def test_tilelang_import_runs_without_collections(before: str) -> None:
    """A worker imports TileLang with the garbage collector off (the collections over the
    import's young objects were a sixth of its time, on a cold build's critical path),
    freezes what it made, and leaves the collector as it found it."""
    found = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, before], check=True,
                           capture_output=True, text=True, env=worker_environment()
                           ).stdout.split()
    assert found == ["None", "0", str(before == "on"), "True"]
