"""What a lowered variant's page cannot show, and why, in the words the page and the
build's warning both use.

A variant that lowered can still leave a part of its page short: the schedule figure
when the reader of the pipeliner's IR trips on it (``Result["schedule"]["error"]``) or
reads a schedule the final code contradicts (``problems``), a statement of a pipelined
loop that no kernel line could be given (``why``), pass configs the kernel's author meant
that the factory's decorators kept out of reach (``unapplied_configs``). Each is said on
the page where the part would be, and once per directive as a ``tlstages.unread``
warning at its line (:func:`sphinx_tlstages.ext.checks.run.check_project`), so ``-W``
fails rather than a page silently showing less.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# A loop the planner annotated whose rewritten form the reader found nothing of.
NO_SCHEDULE = ("the pipeliner rewrote the loop, but no schedule of it was read off the IR "
               "after the pipeliner")


def schedule_unread(schedule: Mapping[str, Any] | None) -> str | None:
    """Why the schedule figure is not drawn from a schedule the worker recorded (None:
    it is drawn)."""
    if schedule is None:
        return NO_SCHEDULE
    if schedule.get("error"):
        return f"the schedule could not be read off the IR ({schedule['error']})"
    if schedule.get("problems"):
        return ("the schedule read after the pipeliner disagrees with the generated code "
                f"({'; '.join(schedule['problems'])})")
    return None


def configs_unread(configs: Mapping[str, Any], where: Callable[[int], str]) -> str:
    """Pass configs the kernel's text gives that were not applied, and why (``where``
    names a kernel line as the page does)."""
    line = configs.get("line")
    at = f" (the decorator at {where(line)})" if isinstance(line, int) else ""
    return (f"the kernel's pass configs {', '.join(configs['keys'])} were not applied"
            f"{at}: {configs['why']}")


def unread(result: Mapping[str, Any], where: Callable[[int], str] = lambda n: f"line {n}"
           ) -> list[str]:
    """Each thing this lowered variant's page cannot show, in a sentence (empty: the page
    shows everything; a failed variant is reported as failed, not here). ``where`` names
    a kernel line as the page does."""
    if not result.get("ok"):
        return []
    found: list[str] = []
    schedule = result.get("schedule")
    # A page built from a snapshot has no schedule to draw, and says so itself.
    planned = any(loop.get("stage") for loop in result.get("pipeline") or []) \
        or bool(result.get("warp_specialized"))
    why = schedule_unread(schedule) if schedule or (planned and not result.get(
        "from_snapshot")) else None
    if why:
        found.append(f"the schedule figure is not drawn: {why}")
    for loop in result.get("pipeline") or []:
        for stmt in loop.get("statements", []):
            if stmt.get("line") is None:
                found.append(f"{stmt['text']} is on no kernel line: {stmt.get('why', '')}")
    configs = result.get("unapplied_configs")
    if configs:
        found.append(configs_unread(configs, where))
    return found
