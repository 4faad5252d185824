"""``:hardware:`` and what ``tlstages hardware`` records, without a GPU: the option, the
edits of a checked run's CUDA, which GPU runs which code, compute-sanitizer's output as
recorded on an H100 (``tests/fixtures/hardware/*.txt``), and a record set beside the
static verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sphinx_tlstages.core.errors import OptionError
from sphinx_tlstages.core.hardware import code_edits, sanitizer
from sphinx_tlstages.core.hardware.gpu_runs import launch_sizes, sizes_named, why_not_here
from sphinx_tlstages.core.plan.options import FIRST_AND_LAST, Hardware, parse_hardware
from sphinx_tlstages.core.records.bench_data import BenchFileError
from sphinx_tlstages.core.records.hardware_data import judge, observed, validate

FIXTURES = Path(__file__).parent / "fixtures" / "hardware"
pytestmark = pytest.mark.quick


# ------------------------------------------------------------------------- the option


def test_an_empty_hardware_option_launches_the_first_and_the_last_block_twice() -> None:
    assert parse_hardware("") == Hardware((), FIRST_AND_LAST, 2)
    assert parse_hardware("").blocks_words == "the first and the last block"


def test_the_hardware_option_takes_sizes_blocks_and_launches() -> None:
    found = parse_hardware("seqlen=129 blocks=0,5 launches=3")
    assert found == Hardware((("seqlen", 129),), (0, 5), 3)
    assert found.blocks_words == "blocks 0, 5"
    assert parse_hardware("blocks=-1").blocks_words == "block the last"


@pytest.mark.parametrize(("text", "message"), [
    ("seqlen", "expected NAME=VALUE pairs"),
    ("seqlen=x", "'x' is not a whole number"),
    ("seqlen=0", "seqlen must be at least 1"),
    ("blocks=0,0", "blocks lists a block twice"),
    ("blocks=-2", "blocks must be at least -1"),
    ("launches=0", "launches must be at least 1"),
])
def test_the_hardware_option_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_hardware(text)


# ----------------------------------------------------------------------- the CUDA edits


def _cuda(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_the_blocks_not_checked_return_before_the_first_statement() -> None:
    code = _cuda("gemm-sm_80-ns2.cu")
    edited = code_edits.only_blocks(code, (0, -1))
    added = [line for line in edited.splitlines() if line not in code.splitlines()]
    assert added == [
        "  { const unsigned tl_hw_block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y"
        " * blockIdx.z);",
        "    if (tl_hw_block != 0u && tl_hw_block != gridDim.x * gridDim.y * gridDim.z - 1u)"
        " return; }  // tlstages hardware: only the blocks checked"]
    lines = edited.splitlines()
    # Right under the definition (not the declaration above it), before any statement.
    at = next(i for i, line in enumerate(lines) if "tl_hw_block = " in line)
    assert lines[at - 1].startswith('extern "C" __global__') and lines[at - 1].endswith("{")


def test_a_hopper_kernel_is_kept_to_its_blocks_too_and_a_clustered_one_is_left_whole() -> None:
    code = _cuda("gemm-sm_90a-ns2.cu")
    assert "tl_hw_block != 3u" in code_edits.only_blocks(code, (3,))
    clustered = code.replace("__launch_bounds__(256, 1)",
                             "__cluster_dims__(2, 1, 1) __launch_bounds__(256, 1)")
    assert code_edits.only_blocks(clustered, (0,)) == clustered


def test_a_deleted_wait_is_the_one_named_and_said_in_the_code() -> None:
    code = _cuda("gemm-sm_80-ns2.cu")
    loop = code_edits.apply(code, None, ["delete-wait:1"])
    assert "tl::cp_async_wait<1>();" not in loop.replace("deleted tl::cp_async_wait<1>", "")
    assert "  tl::cp_async_wait<0>();" in loop
    epilogue = code_edits.delete_wait(code, 2)
    assert "// tlstages hardware: deleted tl::cp_async_wait<0>();" in epilogue
    with pytest.raises(code_edits.EditError, match="has 2 cp_async_wait call"):
        code_edits.delete_wait(code, 3)
    with pytest.raises(code_edits.EditError, match="the one edit is delete-wait:N"):
        code_edits.parse_edit("delete-barrier:1")


# ------------------------------------------------------------------ what a GPU can run


@pytest.mark.parametrize(("kind", "arch", "why"), [
    ("cuda", "sm_90a", None),
    ("cuda", "sm_80", None),  # its PTX, compiled by the driver
    ("cuda", "sm_89", None),
    ("cuda", "sm_100a", "sm_100a code does not run on this sm_90a GPU"),
    ("cuda", "sm_90", None),
    ("hip", "gfx942", "gfx942 is not an NVIDIA target"),
])
def test_which_code_a_hopper_gpu_runs(kind: str, arch: str, why: str | None) -> None:
    said = why_not_here(kind, arch, "sm_90a")
    assert (said is None) if why is None else (said is not None and said.startswith(why))


def test_code_for_one_architecture_s_features_runs_there_alone() -> None:
    assert why_not_here("cuda", "sm_90a", "sm_100a") == \
        "sm_90a code runs only on that architecture, not on this sm_100a GPU"


def test_a_launch_reaches_the_size_a_finding_names_unless_the_option_says_another() -> None:
    finding = {"verdict": "hazard", "text": "hazard", "findings": [
        {"text": "at k=0 reads Q_shared while ... (with seqlen = 0)"}]}
    assert sizes_named(["x (with seqlen = 129, heads = 2)"]) == {"seqlen": 129, "heads": 2}
    assert launch_sizes((), finding) == {"seqlen": 0}  # type: ignore[arg-type]
    assert launch_sizes((("seqlen", 64),), finding) == {"seqlen": 64}  # type: ignore[arg-type]
    assert launch_sizes((), None) == {}


# ---------------------------------------------------------------- the tool's output


def _tally(tool: str, name: str) -> sanitizer.Tally:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return sanitizer.Tally(tool).read_all(text.splitlines(keepends=True))


def test_a_clean_run_on_the_h100_is_counted_from_its_summary() -> None:
    tally = _tally("racecheck", "racecheck-gemm-sm80-clean.txt")
    assert (tally.hazards, tally.errors, tally.warnings, tally.counted) == (0, 0, 0, True)
    assert json.loads(tally.launched or "")["built"] == "ptx"  # sm_80 code, run through PTX
    said = sanitizer.outcome(tally, 0, 7.04, 60)
    assert said == {"seconds": 7.0, "ran": True, "hazards": 0, "errors": 0, "warnings": 0,
                    "aggregated": 0}
    sync = sanitizer.outcome(_tally("synccheck", "synccheck-gemm-sm90a-clean.txt"), 0, 7, 60)
    assert sync == {"seconds": 7, "ran": True, "errors": 0}


@pytest.mark.parametrize(("name", "reports", "errors", "warnings", "aggregated"), [
    # The seed GEMM's epilogue wait deleted (sm_80 code on the H100): every read of the
    # last tile by ldmatrix races its cp.async.
    ("racecheck-gemm-sm80-epilogue-wait-deleted.txt", 32, 32, 0, 131072),
    # ... and its main loop's wait deleted: the reads of every tile race.
    ("racecheck-gemm-sm80-main-loop-wait-deleted.txt", 64, 64, 0, 917504),
    # TileLang's sliding-window sink attention (its epilogue's wait under a guard folded
    # to false), sm_80 code, two stages: the finding of the hazards chapter, observed.
    ("racecheck-mha-sink-window-sm80-ns2.txt", 64, 64, 0, 393216),
    # Gated DeltaNet's delta-h on sm_90a, two stages: plain stores into G_shared against
    # the consumer's reads (not the b_h_shared finding of the hazard check).
    ("racecheck-gdn-delta-h-sm90a-ns2.txt", 8, 8, 0, 19840),
    # tile-ai/tilelang#2668 on sm_80: no wait at all; racecheck rates these warnings.
    ("racecheck-consume-then-fetch-sm80-ns3.txt", 28, 0, 28, 57344),
    # The same on sm_90a: the TMA copy into the one slot against the consumer's reads.
    ("racecheck-consume-then-fetch-sm90a-ns3.txt", 10, 10, 0, 69632),
])
def test_a_race_on_the_h100_is_counted_from_its_summary_and_its_reports(
        name: str, reports: int, errors: int, warnings: int, aggregated: int) -> None:
    tally = _tally("racecheck", name)
    assert (tally.hazards, tally.errors, tally.warnings) == (reports, errors, warnings)
    assert tally.reports == reports  # one "Error:"/"Warning:" line per report
    assert tally.aggregated == aggregated
    said = sanitizer.outcome(tally, 0, 11, 60)
    assert said["ran"] and said["hazards"] == reports
    assert len(said["sample"]) == sanitizer.SAMPLE
    assert said["sample"][0].startswith(("Error: Race reported between ",
                                         "Warning: Race reported between "))
    assert synccheck_errors("synccheck-gemm-sm80-epilogue-wait-deleted.txt") == 0


def synccheck_errors(name: str) -> int:
    """synccheck does not track cp.async completion: the deleted wait is no error of it."""
    return _tally("synccheck", name).found


def test_a_run_that_never_launched_checked_nothing() -> None:
    tally = sanitizer.Tally("synccheck").read_all([
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
        "========= ERROR SUMMARY: 0 errors\n"])
    said = sanitizer.outcome(tally, 1, 5.0, 60)
    assert said["ran"] is False
    assert said["why"] == ("the launch failed: RuntimeError: CUDA error: no kernel image is "
                           "available for execution on the device")
    assert sanitizer.outcome(sanitizer.Tally("racecheck"), None, 60.0, 60)["why"] == \
        "stopped after 60 s"


def test_the_command_tracks_asynchronous_copies_without_backtraces() -> None:
    assert sanitizer.command("racecheck", ["python3", "x.py"]) == [
        "compute-sanitizer", "--tool", "racecheck", "--show-backtrace", "no",
        "--print-limit", "0", "--racecheck-memcpy-async", "yes", "--racecheck-report",
        "analysis", "python3", "x.py"]
    assert sanitizer.command("synccheck", ["p"]) == [
        "compute-sanitizer", "--tool", "synccheck", "--show-backtrace", "no",
        "--print-limit", "0", "p"]


# ------------------------------------------------------------- a record beside a verdict


def _record(hazards: int, sync: int = 0) -> dict[str, object]:
    return {"fingerprint": "f", "target": "sm_80",
            "inputs": {"launches": 2, "blocks_words": "the first and the last block"},
            "racecheck": {"ran": True, "hazards": hazards, "errors": hazards, "warnings": 0,
                          "kinds": ["RAW"] if hazards else []},
            "synccheck": {"ran": True, "errors": sync}}


NONE = {"verdict": "none", "text": "none found: RAW and WAR on S", "findings": []}
HAZARD = {"verdict": "hazard", "text": "hazard: RAW on S", "findings": []}
NOT_CHECKED = {"verdict": "not checked", "text": "not checked: why", "findings": []}


def test_a_race_the_check_did_not_report_is_observed_and_warned() -> None:
    for static in (NONE, NOT_CHECKED, None):
        said = judge(_record(2048), static)  # type: ignore[arg-type]
        assert said.kind == "observed" and said.warns
        assert said.words.startswith("observed on hardware in 2 launches of the first and the "
                                     "last block: racecheck: 2,048 race reports (2,048 errors, "
                                     "0 warnings; RAW); synccheck: 0 errors; ")
    assert judge(_record(0, sync=1), NONE).warns  # type: ignore[arg-type]


def test_a_finding_the_tool_did_not_see_is_not_observed_never_absent() -> None:
    said = judge(_record(0), HAZARD)  # type: ignore[arg-type]
    assert (said.kind, said.warns) == ("not observed", False)
    assert said.words == ("not observed in 2 launches of the first and the last block "
                          "(racecheck: 0 race reports (0 errors, 0 warnings); synccheck: 0 "
                          "errors); "
                          "not observed is not absent: the finding stands")
    assert judge(_record(5), HAZARD).kind == "confirmed"  # type: ignore[arg-type]
    assert judge(_record(0), NONE).words.startswith(  # type: ignore[arg-type]
        "none observed in 2 launches")


def test_a_variant_not_run_or_cut_short_says_why() -> None:
    assert judge({"fingerprint": "f", "not_run": "sm_100a code does not run on this sm_90a "
                  "GPU"}, NONE).words == (  # type: ignore[arg-type]
        "not run: sm_100a code does not run on this sm_90a GPU")
    cut = _record(0)
    cut["synccheck"] = {"ran": False, "why": "stopped after 60 s"}
    assert observed(cut) is None
    assert judge(cut, NONE).words == (  # type: ignore[arg-type]
        "not checked on the GPU: synccheck stopped after 60 s")


def test_a_record_file_is_validated_like_a_bench_file() -> None:
    good = {"schema": 1, "kind": "hardware", "gpu": {"name": "H100"},
            "directives": {"d": {"variants": {"2": _record(0)}}}}
    assert validate(json.loads(json.dumps(good)), "h.json") == good
    bench = {**good, "kind": None}
    with pytest.raises(BenchFileError, match="not a tl-pipeline hardware record"):
        validate(bench, "h.json")
    broken = json.loads(json.dumps(good))
    del broken["directives"]["d"]["variants"]["2"]["racecheck"]["hazards"]
    with pytest.raises(BenchFileError, match="racecheck: needs the counts hazards"):
        validate(broken, "h.json")
