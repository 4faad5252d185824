"""The remote cache: real servers on 127.0.0.1 (moto's S3 and a faulty HTTP server of
ours). Whatever the remote does, the build is green, its pages are those of a build
without the remote, nothing half-written is visible and the log line counts it."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sphinx_tlstages.core.records.cache_entry import BadEntry, object_name, pack, unpack
from sphinx_tlstages.core.results.result import RESULT_SCHEMA, validate
from sphinx_tlstages.runner import launch, pool

from .conftest import CONF, Built, build_once, write_project
from .kernels import GEMM, GEMM_PARAMS, rst
from .remote_servers import FaultServer, fault_server, refused_url, s3_objects, s3_server

PAGE = {"index.rst": "Remote\n======\n\n" + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS,
                                                name="remote")}
LINE = re.compile(r"remote cache (\S+): (\d+) hit, (\d+) missed, (\d+) lowered, (\d+) written"
                  r"(?: \(([^)]*)\))?, (\d+) errors")


@pytest.fixture(scope="module", autouse=True)
def kept_workers() -> Iterator[None]:
    """One TileLang import for the module: the builds that lower fork from a kept server."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TLSTAGES_KEEP_WORKERS", "300")
        patch.setenv("TLSTAGES_CACHE_TIMEOUT", "0.5")
        yield


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, bytes]]:
    """A build without the remote: its page, and its cache entries by key."""
    cache = tmp_path_factory.mktemp("reference-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TLSTAGES_CACHE_DIR", str(cache))
        built = build_once(tmp_path_factory.mktemp("reference"), PAGE)
    entries = {path.stem: path.read_bytes() for path in cache.glob("??/*.json")}
    assert len(entries) == 2, entries
    return (built.outdir / "index.html").read_bytes(), entries


def counts(built: Built) -> tuple[int, int, int, int, str | None, int]:
    """(hit, missed, lowered, written, why read-only, errors) from the log line."""
    match = LINE.search(built.status)
    assert match, built.status
    hit, missed, lowered, written, why, errors = match.groups()[1:]
    return int(hit), int(missed), int(lowered), int(written), why, int(errors)


def remote_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str,
                 name: str = "src", **env: str) -> Built:
    """A build from a fresh folder with an empty local cache, against ``url``."""
    monkeypatch.setenv("TLSTAGES_CACHE_DIR", str(tmp_path / f"{name}-cache"))
    monkeypatch.setenv("TLSTAGES_CACHE_URL", url)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return build_once(tmp_path / name, PAGE)


def assert_whole(built: Built, tmp_path: Path, reference: tuple[bytes, dict[str, bytes]],
                 name: str = "src") -> None:
    """The page is the reference's; every local entry is whole and valid, those taken
    from the remote byte for byte the reference's."""
    page, entries = reference
    assert (built.outdir / "index.html").read_bytes() == page
    local = tmp_path / f"{name}-cache"
    assert not list(local.rglob("*.tmp"))
    found = {path.stem: path.read_bytes() for path in local.glob("??/*.json")}
    assert set(found) == set(entries)
    for data in found.values():
        assert validate(json.loads(data)) is not None


def serve(server: FaultServer, entries: dict[str, bytes]) -> None:
    server.objects = {object_name(key): pack(key, body) for key, body in entries.items()}


def no_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(launch.subprocess, "Popen", refuse)
    monkeypatch.setattr(pool, "start_server", refuse)
    monkeypatch.setattr("sphinx_tlstages.ext.lowering.batch.start_server", refuse)
    monkeypatch.setattr("sphinx_tlstages.ext.lowering.prestart.start_server", refuse)


def no_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that must take every directive's written HTML from a cache, as a warm
    local build does: writing or highlighting one again fails it."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a directive's HTML was written again")

    monkeypatch.setattr("sphinx_tlstages.ext.builders.html._write_html", refuse)
    monkeypatch.setattr("sphinx_tlstages.ext.builders.html.highlight_cached", refuse)


FRAGMENTS = re.compile(r"page fragments (\d+) hit, (\d+) missed, (\d+) written, (\d+) errors")


def fragment_counts(built: Built) -> tuple[int, ...]:
    """(hit, missed, written, errors) of the pages' fragments, from the log."""
    match = FRAGMENTS.search(built.status)
    assert match, built.status
    return tuple(map(int, match.groups()))


def test_entries_prove_themselves() -> None:
    body = b'{"ok": true}'
    data = pack("ab" * 32, body)
    assert unpack("ab" * 32, data) == body
    for bad, why in [(data[:-3], "short"), (data[:10], "no header"),
                     (b"junk\n" + body, "unparsable"), (data[:-1] + b"]", "wrong digest")]:
        with pytest.raises(BadEntry, match=why):
            unpack("ab" * 32, bad)
    with pytest.raises(BadEntry, match="another key"):
        unpack("cd" * 32, data)


def test_warm_http_remote_serves_every_variant(tmp_path, monkeypatch, reference) -> None:
    with fault_server() as server:
        serve(server, reference[1])
        no_workers(monkeypatch)
        built = remote_build(tmp_path, monkeypatch, server.url)
    assert counts(built) == (2, 0, 0, 0, "read-only", 0)
    assert built.warnings == ""
    assert "tilelang" not in sys.modules
    assert_whole(built, tmp_path, reference)


# fault -> (hit, missed, lowered, errors); None: one or two, as the client reads it.
EXPECTED = {
    "404": (0, 2, 2, 0),
    "403": (0, 0, 2, 1),
    "429": (0, 0, 2, 1),
    "500": (0, 0, 2, 1),
    "truncated": (0, 0, 2, None),  # a failed read (off) or a short entry (bad)
    "digest": (0, 0, 2, 2),  # two bad entries: both counted, neither served
    "slow": (0, 0, 2, 1),
    "refused": (0, 0, 2, 1),
    "dies": (1, 0, 1, 1),  # the first answered, then the server is gone
}


@pytest.mark.parametrize("fault", list(EXPECTED))
def test_a_failing_remote_never_fails_the_build(fault, tmp_path, monkeypatch,
                                                reference) -> None:
    with fault_server() as server:
        serve(server, reference[1])
        server.fault = fault
        url = refused_url() if fault == "refused" else server.url
        built = remote_build(tmp_path, monkeypatch, url)
    hit, missed, lowered, written, why, errors = counts(built)
    want = EXPECTED[fault]
    assert (hit, missed, lowered) == want[:3]
    assert errors == want[3] if want[3] is not None else errors in (1, 2)
    assert (written, why) == (0, "read-only")
    # A sick remote is information, never a warning: a -W build stays green.
    assert built.warnings == ""
    said = "what it could not give was lowered here" in built.status
    assert said == bool(errors)
    assert_whole(built, tmp_path, reference)


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_write_then_read_over_http_and_file(scheme, tmp_path, monkeypatch, reference) -> None:
    with fault_server() as server:
        url = server.url if scheme == "http" else (tmp_path / "shared").as_uri()
        first = remote_build(tmp_path, monkeypatch, url, "writer", TLSTAGES_CACHE_WRITE="1")
        assert counts(first) == (0, 2, 2, 2, None, 0)
        monkeypatch.delenv("TLSTAGES_CACHE_WRITE")
        with monkeypatch.context() as patch:
            no_workers(patch)
            fresh = remote_build(tmp_path, monkeypatch, url, "reader")
    assert counts(fresh) == (2, 0, 0, 0, "read-only", 0)
    assert_whole(fresh, tmp_path, reference, "reader")
    if scheme == "file":
        assert not [p for p in (tmp_path / "shared").rglob("*") if ".tmp" in p.name]


def test_s3_main_writes_a_fresh_folder_reads(s3, tmp_path, monkeypatch, reference) -> None:
    url = "s3://books/main"
    first = remote_build(tmp_path, monkeypatch, url, "writer", TLSTAGES_CACHE_WRITE="1")
    assert counts(first) == (0, 2, 2, 2, None, 0)
    assert fragment_counts(first) == (0, 1, 1, 0)
    stored = s3_objects(f"main/v{RESULT_SCHEMA}/")
    assert len(stored) == 2
    for name, data in stored.items():
        key = name.rsplit("/", 1)[1].split(".")[0]
        validate(json.loads(unpack(key, data)))
    (fragment,) = s3_objects("main/fragments/").items()  # the one directive's written HTML
    key = fragment[0].rsplit("/", 1)[1].split(".")[0]
    assert b'class="tl-summary ' in unpack(key, fragment[1])
    monkeypatch.delenv("TLSTAGES_CACHE_WRITE")
    with monkeypatch.context() as patch:
        no_workers(patch)
        no_rendering(patch)  # a fresh folder does no work a warm local build does not
        fresh = remote_build(tmp_path, monkeypatch, url, "reader")
    assert counts(fresh) == (2, 0, 0, 0, "read-only", 0)
    assert fragment_counts(fresh) == (1, 0, 0, 0)
    assert fresh.warnings == ""
    assert "tilelang" not in sys.modules
    assert_whole(fresh, tmp_path, reference, "reader")


def test_s3_pull_request_never_writes(s3, tmp_path, monkeypatch, reference) -> None:
    built = remote_build(tmp_path, monkeypatch, "s3://books/pr", TLSTAGES_CACHE_WRITE="1",
                         GITHUB_EVENT_NAME="pull_request")
    assert counts(built) == (0, 2, 2, 0, "read-only: pull request", 0)
    assert s3_objects("pr/") == {}
    assert_whole(built, tmp_path, reference)


def test_two_builds_writing_one_remote_at_once(s3, tmp_path, reference) -> None:
    procs = []
    for name in ("first", "second"):
        src = tmp_path / name
        write_project(src, PAGE, CONF)
        env = {**os.environ, "TLSTAGES_CACHE_URL": "s3://books/both",
               "TLSTAGES_CACHE_WRITE": "1", "TLSTAGES_CACHE_DIR": str(tmp_path / f"{name}-c")}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "sphinx", "-b", "html", str(src), str(src / "_build")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    written = 0
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and err == "", err
        match = LINE.search(out)
        assert match, out
        written += int(match.group(5))
    stored = s3_objects(f"both/v{RESULT_SCHEMA}/")
    assert len(stored) == 2 and 2 <= written <= 4
    # Each build's fragment is keyed by its own results' bytes (their timings differ):
    # one or two, each whole.
    fragments = s3_objects("both/fragments/")
    assert 1 <= len(fragments) <= 2
    for name, data in fragments.items():
        assert b"tl-summary" in unpack(name.rsplit("/", 1)[1].split(".")[0], data)
    for name, data in stored.items():
        key = name.rsplit("/", 1)[1].split(".")[0]
        assert validate(json.loads(unpack(key, data))) is not None
    for name in ("first", "second"):
        assert (tmp_path / name / "_build" / "index.html").read_bytes() == reference[0]


def test_s3_server_killed_lowers_here(tmp_path, monkeypatch, reference) -> None:
    pytest.importorskip("moto")
    with s3_server() as endpoint:
        pass  # started and stopped: the endpoint no longer answers
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    built = remote_build(tmp_path, monkeypatch, "s3://books/gone")
    assert counts(built)[:3] == (0, 0, 2) and counts(built)[5] == 1
    assert_whole(built, tmp_path, reference)


def test_helper_modules_are_recorded_relative_to_the_source(tmp_path, own_cache,
                                                           monkeypatch) -> None:
    """A kernel importing a module beside it hits the cache from another folder (another
    machine): the entry names the helper relative to the source directory, and the
    directive's written HTML is keyed by nothing of the folder either."""
    styles = Path(__file__).parent / "kernels" / "styles"
    first = tmp_path / "first"
    (first / "kernels").mkdir(parents=True)
    for name in ("helper_user.py", "tile_helpers.py"):
        shutil.copy(styles / name, first / "kernels" / name)
    page = {"index.rst": "T\n=\n\n.. tl-pipeline::\n   :file: kernels/helper_user.py\n"
                         "   :params: M=256 N=256 K=256\n   :num-stages: 2\n"}
    built = build_once(first, page)
    assert ": lowered in" in built.status
    entry = next(own_cache.glob("??/*.json")).read_text(encoding="utf-8")
    assert '"path": "kernels/tile_helpers.py"' in entry
    page_html = (built.outdir / "index.html").read_bytes()
    second = tmp_path / "second"
    shutil.copytree(first / "kernels", second / "kernels")
    shutil.rmtree(first)  # as on another machine: the first folder is nowhere
    no_rendering(monkeypatch)
    again = build_once(second, page)
    assert ": lowered in" not in again.status and ": cached" in again.status
    assert (again.outdir / "index.html").read_bytes() == page_html


def test_cache_export_import_and_status(s3, tmp_path, monkeypatch, reference, capsys) -> None:
    from sphinx_tlstages.cli import main

    source = tmp_path / "source"
    for key, body in reference[1].items():
        (source / key[:2]).mkdir(parents=True, exist_ok=True)
        (source / key[:2] / f"{key}.json").write_bytes(body)
    archive = tmp_path / "cache.tar.gz"
    assert main(["cache", "export", str(archive), "--cache-dir", str(source)]) == 0
    target = tmp_path / "target"
    assert main(["cache", "import", str(archive), "--cache-dir", str(target)]) == 0
    assert {p.stem: p.read_bytes() for p in target.glob("??/*.json")} == reference[1]
    # An archive with one entry altered: that entry is skipped, the other kept.


    tampered = tmp_path / "tampered.tar"
    with tarfile.open(archive) as tar, tarfile.open(tampered, "w") as out:
        for number, member in enumerate(tar):
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            if number == 0:
                data = data[:-1] + bytes([data[-1] ^ 1])
            member.size = len(data)
            out.addfile(member, io.BytesIO(data))
    again = tmp_path / "again"
    assert main(["cache", "import", str(tampered), "--cache-dir", str(again)]) == 1
    assert len(list(again.glob("??/*.json"))) == 1
    assert not list(again.rglob("*.tmp"))
    # Status: local and remote (moto, written by a writing build's entries).
    import boto3

    for key, body in reference[1].items():
        boto3.client("s3").put_object(Bucket="books", Key=f"status/{object_name(key)}",
                                      Body=pack(key, body))
    capsys.readouterr()
    assert main(["cache", "status", "--cache-dir", str(target),
                 "--url", "s3://books/status"]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"local .*: 2 entries, .*schema {RESULT_SCHEMA}: 2", out), out
    assert re.search(rf"remote s3://books/status: 2 entries, .*schema {RESULT_SCHEMA}: 2", out), out
