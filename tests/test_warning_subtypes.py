"""Every warning subtype the reference documents is raised somewhere, and every subtype
raised is documented: the reference page (generated from ``SUBTYPES``) promises nothing
dead."""

from __future__ import annotations

import ast
from pathlib import Path

from sphinx_tlstages.core.errors import SUBTYPES

PACKAGE = Path(__file__).resolve().parent.parent / "sphinx_tlstages"


def _reports(call: ast.Call) -> bool:
    """Whether ``call`` says a typed message: ``warn``/``error`` of the messages module,
    of the build's findings sink (``state.findings.warn``, ``findings.error``), or
    ``say`` of what reading says (the directive's ``self._say``)."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in ("warn", "error", "say")
    if isinstance(func, ast.Attribute) and func.attr == "_say":
        return True
    if not (isinstance(func, ast.Attribute) and func.attr in ("warn", "error")):
        return False
    owner = func.value
    return (owner.attr if isinstance(owner, ast.Attribute) else
            getattr(owner, "id", "")) == "findings"


# Where a ``subtype`` parameter is handed on: the sink's own methods to the messages
# module, what reading said (said again as it was said), the directive's ``_say``.
PASSING_ON = ("findings.py", "reread.py", "directive.py")


def _passed_on(arg: ast.expr) -> bool:
    return isinstance(arg, ast.Name) and arg.id == "subtype"


def raised_subtypes() -> dict[str, list[str]]:
    """Subtype -> the places (``file:line``) that pass it to ``warn`` or ``error``, or to
    the findings sink's."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and _reports(node)):
                continue
            # say(env, message, subtype, ...) takes the environment first.
            at = 2 if isinstance(node.func, ast.Name) and node.func.id == "say" else 1
            args = [*node.args[at:at + 1],
                    *(k.value for k in node.keywords if k.arg == "subtype")]
            for arg in args:
                if _passed_on(arg) and path.name in PASSING_ON:
                    continue
                assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), (
                    f"{path}:{node.lineno}: the subtype must be written out, so this "
                    "test can see it")
                where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                found.setdefault(arg.value, []).append(where)
    return found


def test_every_documented_subtype_is_raised_and_every_raised_one_documented() -> None:
    raised = raised_subtypes()
    assert sorted(set(SUBTYPES) - set(raised)) == [], "documented, never raised"
    assert sorted(set(raised) - set(SUBTYPES)) == [], "raised, not documented"


# What the check step says outside the sink: the build's summary lines, not findings.
NOT_FINDINGS = {("checks/run.py", "check_project"), ("checks/run.py", "set_exit_status"),
                ("checks/drift_report.py", "write_report")}


def test_the_checks_report_findings_only_to_the_sink() -> None:
    """A check that logged a finding itself would leave it out of the drift report and
    the exit status: every warning or error of ``ext/checks`` goes through the sink."""
    found = []
    for path in sorted((PACKAGE / "ext" / "checks").glob("*.py")):
        where = path.relative_to(PACKAGE / "ext").as_posix()
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef) or (where, function.name) in NOT_FINDINGS:
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                        and node.func.id in ("warn", "error", "info"):
                    found.append(f"{where}:{node.lineno} ({function.name})")
    assert found == []
