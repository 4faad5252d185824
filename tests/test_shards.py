"""The split of ``tlstages lower-book --shard I/N`` (core.plan.shards): stable, disjoint,
whole, balanced by cost, twins together. Quick: no TileLang, no Sphinx."""

from __future__ import annotations

import random

import pytest

from sphinx_tlstages.core.errors import OptionError
from sphinx_tlstages.core.plan import shards
from sphinx_tlstages.core.plan.spec import VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.plan.variants import matrix

STAMP = "tilelang-test"


def kernel(lines: int, name: str) -> str:
    body = "\n".join(f"    x{i} = {i}" for i in range(lines))
    return f"def {name}(num_stages=2):\n{body}\n    return num_stages\n"


def book(kernels: int = 12, seed: int = 0) -> dict[str, VariantSpec]:
    """Kernels of mixed sizes, each over 1-4 stages and two or three targets."""
    rng = random.Random(seed)
    targets = [parse_target(t) for t in ("sm_80", "sm_90a", "gfx942")]
    found: dict[str, VariantSpec] = {}
    for number in range(kernels):
        source = kernel(rng.randint(10, 200), f"k{number}")
        chosen = targets[: rng.choice((2, 3))]
        for variant in matrix(source, f"k{number}.py", f"k{number}", {}, {}, (1, 2, 3, 4),
                              chosen, record_passes=number % 3 == 0):
            found[variant.key(STAMP)] = variant
    return found


@pytest.mark.parametrize("text, parsed", [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3 / 3 ", (3, 3))])
def test_parse_shard(text: str, parsed: tuple[int, int]) -> None:
    assert shards.parse_shard(text) == parsed


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "2/0", "-1/3", ""])
def test_parse_shard_refuses(text: str) -> None:
    with pytest.raises(OptionError, match="I/N"):
        shards.parse_shard(text)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_union_is_the_book_and_disjoint(count: int) -> None:
    variants = book()
    parts = [shards.select(variants, STAMP, (i, count)) for i in range(1, count + 1)]
    assert set().union(*parts) == set(variants)
    assert sum(map(len, parts)) == len(variants)


def test_stable_whatever_the_order_and_the_process() -> None:
    """Each shard computes the split on its own: it may not depend on the order the
    directives were read in, nor on anything of the process (hash seeds)."""
    variants = book()
    first = shards.assign(variants, STAMP, 4)
    keys = list(variants)
    random.Random(1).shuffle(keys)
    again = shards.assign({key: variants[key] for key in keys}, STAMP, 4)
    assert first == again
    # A pinned expectation: the same book and N give the same split on any machine.
    small = {f"{i:064x}": v for i, v in enumerate(
        matrix(kernel(30, "k"), "k.py", "k", {}, {}, (1, 2, 3, 4), (parse_target("sm_80"),)))}
    assert shards.split({k: shards.estimate(v) for k, v in small.items()}, 2) == [
        [f"{3:064x}", f"{0:064x}"], [f"{2:064x}", f"{1:064x}"]]


def test_recording_twins_share_a_shard() -> None:
    source = kernel(40, "k")
    plain = matrix(source, "k.py", "k", {}, {}, (1, 2, 3), (parse_target("sm_80"),))
    recording = tuple(v.recording() for v in plain)
    variants = {v.key(STAMP): v for v in plain + recording}
    assert len(variants) == 6
    where = shards.assign(variants, STAMP, 3)
    for variant in plain:
        assert where[variant.key(STAMP)] == where[variant.recording().key(STAMP)]


@pytest.mark.parametrize("seed", range(5))
def test_balanced_by_cost(seed: int) -> None:
    """Shards of a few dozen mixed variants cost within a fifth of the mean (estimates),
    where a split by count alone does not have to."""
    variants = book(seed=seed)
    costs = {key: shards.estimate(v) for key, v in variants.items()}
    for count in (2, 4):
        where = shards.assign(variants, STAMP, count)
        loads = [sum(c for k, c in costs.items() if where[k] == i)
                 for i in range(1, count + 1)]
        assert max(loads) / (sum(loads) / count) <= 1.05, loads


def test_estimate_orders_the_costs() -> None:
    small, large = kernel(20, "k"), kernel(200, "k")
    sm80, sm90 = parse_target("sm_80"), parse_target("sm_90a")
    (a,) = matrix(small, "k.py", "k", {}, {}, (1,), (sm80,))
    (b,) = matrix(large, "k.py", "k", {}, {}, (1,), (sm80,))
    (c,) = matrix(large, "k.py", "k", {}, {}, (4,), (sm80,))
    (d,) = matrix(large, "k.py", "k", {}, {}, (4,), (sm90,))
    costs = [shards.estimate(v) for v in (a, b, c, d, d.recording())]
    assert costs == sorted(costs) and len(set(costs)) == len(costs)
