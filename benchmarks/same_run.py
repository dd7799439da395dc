"""Scenarios in child processes, this tree and a baseline tree alternating: before/after in one run.

The machine's speed changes from minute to minute (2 shared cores), so a figure is only
compared with one measured in the same run. A scenario runs in a fresh interpreter whose
`PYTHONPATH` starts with the chosen tree's `src` (a `git archive <commit> src` unpacked
somewhere), so both trees run the same benchmark code; rounds alternate the order.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def add_baseline_label(parser: Any) -> None:
    """`--baseline-label`: how the results name the `--baseline-src` tree (its path is not kept)."""
    parser.add_argument("--baseline-label", help="how the results name --baseline-src, e.g. 'git archive "
                        "fc79d6e src' (default: the folder's name; the path is not written)")


def baseline_label(args: Any) -> str | None:
    """The name the results give the baseline tree: never a path of the machine that ran them."""
    if getattr(args, "baseline_src", None) is None:
        return None
    return str(args.baseline_label or Path(args.baseline_src).name)


def cpu_to_pin(parser: Any, option: str) -> int:
    """The machine's last CPU, for `pinned_command`; a usage error for `option` where `taskset`
    cannot run (not Linux, util-linux missing)."""
    if shutil.which("taskset") is None or not hasattr(os, "sched_getaffinity"):
        parser.error(f"{option} needs Linux's taskset (util-linux)")
    return max(os.sched_getaffinity(0))


def pinned_command(cpu: int | None) -> list[str]:
    """What goes before a command to run it and every thread it starts on `cpu` (None: nothing)."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


def run_child(script: str, args: Sequence[str], src: Path | None, cpu: int | None = None) -> dict[str, Any]:
    """Run `script --child ... args` on tree `src` (None: this one), on `cpu` alone when given;
    its last stdout line is JSON."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src / "src"), env.get("PYTHONPATH")]))
    out = subprocess.run([*pinned_command(cpu), sys.executable, script, *args], env=env, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def rounds(script: str, scenarios: Sequence[str], child_args: Sequence[str], count: int,
           baseline: Path | None, key: str) -> dict[str, dict[str, Any]]:
    """tree -> scenario -> {min, median, max of `key`, runs}; prints each figure as it comes."""
    trees: dict[str, Path | None] = {"current": None}
    if baseline is not None:
        trees["baseline"] = baseline.resolve()
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {t: {s: [] for s in scenarios} for t in trees}
    for index in range(count):
        for scenario in scenarios:
            order = list(trees.items()) if index % 2 == 0 else list(reversed(trees.items()))
            for tree, src in order:
                figure = run_child(script, ["--child", scenario, *child_args], src)
                runs[tree][scenario].append(figure)
                cpu = next((f"  {v} us CPU per item" for k, v in figure.items() if k.startswith("cpu_us")), "")
                print(f"round {index + 1} {tree:<8} {scenario:<24} {figure[key]:>8} /s{cpu}", flush=True)
    return {tree: {scenario: summary(figures, key) for scenario, figures in by_scenario.items()}
            for tree, by_scenario in runs.items()}


def summary(figures: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """min / median / max of `key`, and the median of a `cpu_us_per_*` figure (CPU time of the
    whole process per item: on a shared machine it moves less than the rate)."""
    values = [f[key] for f in figures]
    result: dict[str, Any] = {"min": min(values), "median": statistics.median(values), "max": max(values)}
    cpu = [v for f in figures for k, v in f.items() if k.startswith("cpu_us")]
    if len(cpu) == len(figures):
        result["cpu_us_median"] = statistics.median(cpu)
    return result | {"runs": figures}


def print_table(figures: dict[str, Any], scenarios: Sequence[str], unit: str, width: int) -> None:
    """The figures of `rounds` as a table: min / median / max per scenario, its CPU per item and,
    when a baseline tree ran, the baseline's median and the ratio to it."""
    print(f"{'scenario':<{width}} {'min':>7} {'median':>7} {'max':>7} {unit}" + "  CPU us/item" +
          ("   baseline median  CPU us  ratio" if "baseline" in figures else ""))
    for name in scenarios:
        row = figures["current"][name]
        line = f"{name:<{width}} {row['min']:>7} {row['median']:>7} {row['max']:>7}  {row.get('cpu_us_median', '-'):>11}"
        if "baseline" in figures:
            base = figures["baseline"][name]
            line += f"   {base['median']:>15}  {base.get('cpu_us_median', '-'):>6}  {row['median'] / base['median']:5.2f}"
        print(line)
