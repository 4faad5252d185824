"""``tlstages lower-book --shard I/N`` against moto's S3 server on 127.0.0.1: shards as
separate processes, as a CI matrix runs them.

One sequence, module-scoped so the book is lowered about once: a shard killed midway
(SIGKILL while it lowers), then the three shards at once (the killed one again); the
tests then read what it left. The final builds run here, with workers forbidden where
the shards must have left them nothing to do.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sphinx_tlstages.core.records.cache_entry import unpack
from sphinx_tlstages.core.results.result import RESULT_SCHEMA, validate

from .conftest import build_once, write_project
from .kernels import rst
from .remote_servers import refused_url, s3_objects
from .shard_book import BOOK, PAGES, VARIANTS
from .test_remote_cache import LINE, no_workers

ROOT = Path(__file__).resolve().parent.parent
SHARDS = 3
SUMMARY = re.compile(r"^shard (\d+)/(\d+): (\d+) variants, (\d+) already cached, (\d+) lowered "
                     r"\((\d+) s in workers\), (\d+) failed, written to (\S+)$", re.MULTILINE)


@dataclass
class Sharded:
    """What the sequence left: its folders, the killed shard's leftovers and the
    shards' summaries."""

    root: Path
    url: str
    after_kill: dict[str, bytes] = field(default_factory=dict)  # objects a killed shard left
    killed_local: list[Path] = field(default_factory=list)
    summaries: dict[int, tuple[str, ...]] = field(default_factory=dict)
    codes: dict[int, int] = field(default_factory=dict)
    local_keys: dict[int, set[str]] = field(default_factory=dict)


def shard_command(srcdir: Path, shard: str, cache: Path, url: str,
                  verbose: bool = False) -> subprocess.Popen[str]:
    """One shard as its own process, with one worker (two cores are all there is)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TLSTAGES_CACHE_URL=url,
               TLSTAGES_CACHE_WRITE="1", TLSTAGES_CACHE_DIR=str(cache), TLSTAGES_JOBS="1")
    command = [sys.executable, "-m", "sphinx_tlstages", "lower-book", str(srcdir),
               "--shard", shard, *(["-v"] if verbose else [])]
    # A session of its own: killing its group kills its fork server and workers too.
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


@pytest.fixture(scope="module")
def sharded(s3: str, tmp_path_factory: pytest.TempPathFactory) -> Sharded:
    root = tmp_path_factory.mktemp("sharded")
    write_project(root / "src", BOOK)
    done = Sharded(root, "s3://books/book")
    # Shard 1 of 3, killed as soon as it has lowered one variant (others still lowering).
    victim = shard_command(root / "src", f"1/{SHARDS}", root / "cache-1", done.url, True)
    assert victim.stderr is not None
    deadline = time.monotonic() + 240
    for line in victim.stderr:
        if ": lowered in " in line or time.monotonic() > deadline:
            break
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    time.sleep(0.5)  # a PUT already sent lands or not: it is never half there
    done.after_kill = s3_objects("book/")
    done.killed_local = sorted((root / "cache-1").rglob("*.json"))
    # The three shards at once; the killed one starts again.
    running = {i: shard_command(root / "src", f"{i}/{SHARDS}", root / f"cache-{i}", done.url)
               for i in range(1, SHARDS + 1)}
    for i, proc in running.items():
        out, err = proc.communicate(timeout=500)
        done.codes[i] = proc.returncode
        found = SUMMARY.search(out)
        assert found, (out, err)
        done.summaries[i] = found.groups()
        done.local_keys[i] = {p.stem for p in (root / f"cache-{i}").rglob("*.json")}
    return done


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The pages of a one-machine cold build, with a cache of its own and no remote."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TLSTAGES_CACHE_DIR", str(tmp_path_factory.mktemp("reference-cache")))
        built = build_once(tmp_path_factory.mktemp("reference"), BOOK)
    assert not built.warnings, built.warnings
    return {page: (built.outdir / f"{page}.html").read_bytes() for page in PAGES}


def entries(stored: dict[str, bytes], prefix: str = "book") -> dict[str, dict[str, object]]:
    """Every stored object, each proved whole and a valid result, by key."""
    found = {}
    for name, data in stored.items():
        assert name.startswith(f"{prefix}/v{RESULT_SCHEMA}/"), name
        key = name.rsplit("/", 1)[1].removesuffix(".entry")
        result = validate(json.loads(unpack(key, data)))
        assert result is not None, name
        found[key] = result
    return found


def test_a_killed_shard_leaves_only_whole_entries(sharded: Sharded) -> None:
    assert len(entries(sharded.after_kill)) < VARIANTS  # it was killed before the end
    for path in sharded.killed_local:
        assert validate(json.loads(path.read_bytes())) is not None, path


def test_shards_are_disjoint_and_their_union_is_the_book(sharded: Sharded) -> None:
    assert sharded.codes == {i: 0 for i in range(1, SHARDS + 1)}
    counts = {i: int(s[2]) for i, s in sharded.summaries.items()}
    assert sum(counts.values()) == VARIANTS and all(counts.values()), counts
    for i, (index, of, variants, cached, lowered, _, failed, url) in sharded.summaries.items():
        assert (int(index), int(of), int(failed), url) == (i, SHARDS, 0, "s3://books/book")
        assert int(cached) + int(lowered) == int(variants)
    # The killed shard's entries were taken back, not lowered again.
    assert int(sharded.summaries[1][3]) >= len(sharded.killed_local) >= 1
    keys = sharded.local_keys
    assert sum(map(len, keys.values())) == VARIANTS == len(set().union(*keys.values()))
    assert set(entries(s3_objects("book/"))) == set().union(*keys.values())


def final_build(root: Path, name: str, url: str) -> tuple[str, dict[str, bytes]]:
    """A build from a fresh folder and local cache, the remote read-only: its log and
    pages."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TLSTAGES_CACHE_DIR", str(root / f"{name}-cache"))
        patch.setenv("TLSTAGES_CACHE_URL", url)
        built = build_once(root / name, BOOK)
    return built.status, {page: (built.outdir / f"{page}.html").read_bytes()
                          for page in PAGES}


def test_the_final_build_lowers_nothing_and_its_pages_are_a_cold_build_s(
        sharded: Sharded, reference: dict[str, bytes]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        no_workers(patch)
        status, pages = final_build(sharded.root, "final", sharded.url)
    line = LINE.search(status)
    assert line and line.groups()[1:5] == (str(VARIANTS), "0", "0", "0"), status
    assert pages == reference


def test_a_missing_shard_is_lowered_by_the_final_build(
        sharded: Sharded, reference: dict[str, bytes]) -> None:
    """Shard 3's entries gone from a copy of the remote: the final build lowers them
    itself and says how many."""
    import boto3

    client = boto3.client("s3")
    for name, data in s3_objects("book/").items():
        if name.rsplit("/", 1)[1].removesuffix(".entry") not in sharded.local_keys[3]:
            client.put_object(Bucket="books", Key="partial/" + name.split("/", 1)[1],
                              Body=data)
    missing = len(sharded.local_keys[3])
    status, pages = final_build(sharded.root, "partial", "s3://books/partial")
    line = LINE.search(status)
    assert line, status
    hit, missed, lowered = map(int, line.groups()[1:4])
    assert (hit, missed, lowered) == (VARIANTS - missing, missing, missing), status
    assert pages == reference


def test_nowhere_to_keep_the_results(tmp_path: Path) -> None:
    """No writable shared cache and no local one that outlives the command: refused
    before anything is lowered."""
    write_project(tmp_path / "src", BOOK)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TLSTAGES_CACHE")}
    done = subprocess.run([sys.executable, "-m", "sphinx_tlstages", "lower-book",
                           str(tmp_path / "src"), "--shard", "2/3"],
                          env=dict(env, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert "kept nowhere" in done.stderr


def merged_cache(sharded: Sharded, into: Path) -> Path:
    """The shards' local caches in one folder, as N processes on one machine share one."""
    for i in range(1, SHARDS + 1):
        shutil.copytree(sharded.root / f"cache-{i}", into, dirs_exist_ok=True)
    return into


def test_a_for_loop_on_one_machine_needs_no_remote(
        sharded: Sharded, reference: dict[str, bytes], tmp_path: Path) -> None:
    """The shards' one local cache folder and no remote: the final build finds every
    variant (the workers that start early on a cold cache stay unstarted) and writes the
    pages of a cold build."""
    with pytest.MonkeyPatch.context() as patch:
        no_workers(patch)
        patch.setenv("TLSTAGES_CACHE_DIR", str(merged_cache(sharded, tmp_path / "cache")))
        built = build_once(tmp_path / "src", BOOK)
    assert f"{VARIANTS} variants, 0 lowered, {VARIANTS} cached" in built.status
    assert {page: (built.outdir / f"{page}.html").read_bytes() for page in PAGES} == reference


def test_a_shard_writes_what_the_remote_lacks_from_its_local_cache(
        sharded: Sharded, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Shard 2 again, its local cache kept and a remote that lost its entries (a new
    prefix): nothing is lowered, and every entry of the shard is written (the pass that
    checks the shard is stored, which also puts back what a build's bounded wait
    dropped)."""
    from sphinx_tlstages.cli.shard import lower_book

    shutil.copytree(sharded.root / "cache-2", tmp_path / "cache")
    with pytest.MonkeyPatch.context() as patch:
        no_workers(patch)
        patch.setenv("TLSTAGES_CACHE_DIR", str(tmp_path / "cache"))
        patch.setenv("TLSTAGES_CACHE_URL", "s3://books/repaired")
        patch.setenv("TLSTAGES_CACHE_WRITE", "1")
        assert lower_book(sharded.root / "src", (2, SHARDS)) == 0
    found = SUMMARY.search(capsys.readouterr().out)
    assert found, capsys.readouterr()
    count = len(sharded.local_keys[2])
    assert found.groups()[2:5] == (str(count), str(count), "0")
    assert set(entries(s3_objects("repaired/"), "repaired")) == sharded.local_keys[2]


def test_a_shard_that_cannot_store_says_so(
        sharded: Sharded, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shared cache refuses connections: the shard's results are not where the final
    build will look, so the status is 1, and the log says why."""
    from sphinx_tlstages.cli.shard import lower_book

    shutil.copytree(sharded.root / "cache-2", tmp_path / "cache")
    with pytest.MonkeyPatch.context() as patch:
        no_workers(patch)
        patch.setenv("AWS_ENDPOINT_URL", refused_url().removesuffix("/cache"))
        patch.setenv("TLSTAGES_CACHE_DIR", str(tmp_path / "cache"))
        patch.setenv("TLSTAGES_CACHE_URL", "s3://books/refused")
        patch.setenv("TLSTAGES_CACHE_WRITE", "1")
        patch.setenv("TLSTAGES_CACHE_TIMEOUT", "0.5")
        assert lower_book(sharded.root / "src", (2, SHARDS)) == 1
    out, err = capsys.readouterr()
    count = len(sharded.local_keys[2])
    assert f"{count} not stored in s3://books/refused" in out
    assert "remote cache s3://books/refused: " in err


FAILING = """\
@tilelang.jit
def broken(n, num_stages):
    if num_stages > 1:
        raise ValueError(f"no pipeline of depth {num_stages} for n={n}")

    @T.prim_func
    def kernel(X: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(n):
                X[i] = X[i] * 2.0

    return kernel
"""


def test_a_failed_variant_is_named_as_a_build_names_it(tmp_path: Path) -> None:
    """A variant that fails to lower is stored as such and named in a build's words; the
    shard is stored, so the status is 0 (the final build reports it again)."""
    write_project(tmp_path / "src", {"index.rst": "Broken\n======\n\n" + rst(
        FAILING, name="broken", num_stages="2", params="n=64")})
    env = {k: v for k, v in os.environ.items() if not k.startswith("TLSTAGES_CACHE")}
    done = subprocess.run([sys.executable, "-m", "sphinx_tlstages", "lower-book",
                           str(tmp_path / "src"), "--cache-dir", str(tmp_path / "cache")],
                          env=dict(env, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.search(r"index\.rst:\d+: broken: .*num_stages=2.* failed to lower \(\w+\): "
                     r".*no pipeline of depth 2 for n=64", done.stderr), done.stderr
    # The failed variant is counted as failed, not as lowered.
    summary = "shard 1/1: 1 variants, 0 already cached, 0 lowered"
    assert summary in done.stdout and ", 1 failed, written to local " in done.stdout
