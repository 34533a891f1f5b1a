"""Mutation gate: mutate each configured module, run its fast tests, report and enforce the score.

    python tools/mutation/run.py                      # every module in config.toml
    python tools/mutation/run.py --module sink/identity.py
    python tools/mutation/run.py --ci                 # the policy modules CI runs (ci = true)
    python tools/mutation/run.py --list --module M    # the mutants and their keys, nothing run

Each worker owns a scratch copy of the repository; a mutant is written into that copy and the
module's selected tests run there in a fresh ``python -m pytest`` with PYTHONPATH pointing at the
copy, so subprocess CLIs started by a test import the mutant too. A mutant is killed when the
tests fail or time out, survived when they pass; a survivor listed in equivalents.toml counts as
equivalent. Score = killed / (mutants - equivalent). Exit 1 when a module is below the threshold,
2 for a bad invocation or configuration, 3 when a module's tests fail without any mutation.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutator import Mutant, enumerate_mutants, mutated_source

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
COPIED = ("sink", "mock_receiver", "fault_proxy", "certification", "tests", "scenarios", "docs", "benchmarks")
COPIED_FILES = ("pyproject.toml", "README.md")


@dataclass(frozen=True)
class ModuleConfig:
    path: str
    tests: list[str]
    select: str | None
    ci: bool
    # A module that reached 100 % is pinned there (threshold = 1.0): then removing any test that
    # alone kills a mutant fails the gate, not only removals that cost 10 points.
    threshold: float


@dataclass
class ModuleResult:
    path: str
    threshold: float
    mutants: int = 0
    killed: int = 0
    timeouts: int = 0
    survivors: list[Mutant] = field(default_factory=list)
    equivalents: list[Mutant] = field(default_factory=list)
    stale_equivalents: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        scored = self.mutants - len(self.equivalents)
        return 1.0 if scored == 0 else self.killed / scored


class ConfigError(Exception):
    pass


def load_config(path: Path) -> tuple[list[str], dict[str, ModuleConfig]]:
    """The pytest arguments and the modules; each module carries its threshold (its own, or the
    file's default)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    threshold = float(data.get("threshold", 0.9))
    pytest_args = list(data.get("pytest_args", []))
    modules: dict[str, ModuleConfig] = {}
    for name, entry in data.get("modules", {}).items():
        if not (REPO / name).is_file():
            raise ConfigError(f"configured module {name} does not exist")
        tests = list(entry.get("tests", []))
        if not tests:
            raise ConfigError(f"{name}: empty test selection")
        own = entry.get("threshold")
        if own is not None and not (isinstance(own, (int, float)) and 0.0 <= own <= 1.0):
            raise ConfigError(f"{name}: threshold must be a number from 0 to 1, not {own!r}")
        modules[name] = ModuleConfig(name, tests, entry.get("select"), bool(entry.get("ci", False)),
                                     threshold if own is None else float(own))
    return pytest_args, modules


def load_equivalents(path: Path) -> dict[str, dict[str, str]]:
    """module -> {mutant key: one-line justification}."""
    data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    result: dict[str, dict[str, str]] = {}
    for entry in data.get("equivalent", []):
        if not entry.get("why"):
            raise ConfigError(f"equivalent without a justification: {entry.get('key')}")
        result.setdefault(entry["module"], {})[entry["key"]] = entry["why"]
    return result


def make_scratch(root: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")
    for name in COPIED:
        if (REPO / name).exists():
            shutil.copytree(REPO / name, root / name, ignore=ignore)
    for name in COPIED_FILES:
        if (REPO / name).exists():
            shutil.copy2(REPO / name, root / name)
    return root


def _env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"RESTPROOF_REQUIRE_POSTGRES", "PYTHONPATH"}}
    # Entry-point plugins (schemathesis, locust, ...) double pytest's start-up; config.toml
    # names the few plugins the tests need with -p.
    env.update(PYTHONPATH=f"{scratch}{os.pathsep}{HERE}", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def _pytest_args(config: ModuleConfig, pytest_args: list[str]) -> list[str]:
    return [*pytest_args, *config.tests, *(["-k", config.select] if config.select else [])]


class ForkWorker:
    """A forkserver.py process bound to one scratch copy (see that module for why)."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self._proc = subprocess.Popen(
            [sys.executable, str(HERE / "forkserver.py"), str(scratch)], cwd=scratch, env=_env(scratch),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def run(self, args: list[str], timeout: float) -> str:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"args": args, "timeout": timeout}) + "\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        if not answer:
            raise RuntimeError("mutation fork worker died")
        return str(json.loads(answer)["verdict"])

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)


def run_tests(scratch: Path, config: ModuleConfig, pytest_args: list[str], timeout: float,
              show_failure: bool = False) -> tuple[str, float]:
    """'pass', 'fail' or 'timeout' for the module's tests in that scratch copy (fresh interpreter)."""
    env = _env(scratch)
    cmd = [sys.executable, "-m", "pytest", *_pytest_args(config, pytest_args)]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    elapsed = time.monotonic() - started
    if proc.returncode == 5:
        raise ConfigError(f"{config.path}: the test selection collected no test")
    if show_failure and proc.returncode != 0:
        sys.stderr.write(proc.stdout.decode(errors="replace")[-3000:])
    return ("pass" if proc.returncode == 0 else "fail"), elapsed


def mutate_module(
    config: ModuleConfig, pytest_args: list[str], workers: list[ForkWorker], equivalents: dict[str, str],
    mutant_filter: str | None, *, only_keys: set[str] | None = None,
) -> ModuleResult:
    source = (REPO / config.path).read_text(encoding="utf-8")
    mutants = enumerate_mutants(config.path, source)
    if mutant_filter:
        mutants = [m for m in mutants if mutant_filter in m.key]
    if only_keys is not None:
        mutants = [m for m in mutants if m.key in only_keys]
    result = ModuleResult(config.path, config.threshold, mutants=len(mutants))
    outcome, baseline = run_tests(workers[0].scratch, config, pytest_args, timeout=600, show_failure=True)
    if outcome != "pass":
        print(f"{config.path}: its tests fail WITHOUT any mutation ({outcome}); fix them first", file=sys.stderr)
        raise SystemExit(3)
    timeout = baseline * 3 + 10
    todo: queue.Queue[Mutant] = queue.Queue()
    for mutant in mutants:
        todo.put(mutant)
    lock = threading.Lock()

    def worker(fork: ForkWorker) -> None:
        target = fork.scratch / config.path
        try:
            while True:
                try:
                    mutant = todo.get_nowait()
                except queue.Empty:
                    return
                target.write_text(mutated_source(source, mutant), encoding="utf-8")
                verdict = fork.run(_pytest_args(config, pytest_args), timeout)
                with lock:
                    if verdict == "pass":
                        (result.equivalents if mutant.key in equivalents else result.survivors).append(mutant)
                    else:
                        result.killed += 1
                        result.timeouts += verdict == "timeout"
        finally:
            target.write_text(source, encoding="utf-8")

    threads = [threading.Thread(target=worker, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = {m.key for m in mutants}
    survived_keys = {m.key for m in result.equivalents}
    result.stale_equivalents = sorted(
        k for k in equivalents
        if (k not in found and not mutant_filter and only_keys is None) or (k in found and k not in survived_keys)
    )
    return result


def print_report(results: list[ModuleResult]) -> bool:
    ok = True
    header = (f"{'module':45} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'equiv':>5} "
              f"{'score':>7} {'needs':>5}")
    print(header)
    print("-" * len(header))
    for r in results:
        passed = r.score >= r.threshold
        ok = ok and passed
        mark = "" if passed else "  BELOW"
        # timeout: kills by timing out (3x the unmutated run + 10 s), included in killed.
        print(f"{r.path:45} {r.mutants:7} {r.killed:6} {r.timeouts:7} {len(r.survivors):8} {len(r.equivalents):5} "
              f"{r.score:7.1%} {r.threshold:5.0%}{mark}")
    for r in results:
        for m in sorted(r.survivors, key=lambda m: m.line):
            print(f"SURVIVED {r.path}:{m.line}  {m.key}")
        for key in r.stale_equivalents:
            print(f"STALE EQUIVALENT {r.path}: {key} (killed now or no longer generated: remove it)")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", help="module path as in config.toml (repeatable)")
    parser.add_argument("--ci", action="store_true", help="only the modules marked ci = true")
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--mutant", help="only mutants whose key contains this text")
    parser.add_argument("--survivors", type=Path,
                        help="only the mutants named by the SURVIVED lines of an earlier report (re-check kills)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel workers (default 2)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    parser.add_argument("--config", type=Path, default=HERE / "config.toml")
    parser.add_argument("--equivalents", type=Path, default=HERE / "equivalents.toml")
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the scratch copies are removed and no mutant is left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        pytest_args, modules = load_config(args.config)
        equivalents = load_equivalents(args.equivalents)
        chosen = _choose(modules, args.module, args.ci)
        survivors = _read_survivors(args.survivors) if args.survivors else None
    except (ConfigError, OSError, tomllib.TOMLDecodeError) as exc:
        print(f"mutation: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for config in chosen:
            for m in enumerate_mutants(config.path, (REPO / config.path).read_text(encoding="utf-8")):
                print(f"{config.path}:{m.line}  {m.key}")
        return 0
    results: list[ModuleResult] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="restproof-mutation-") as tmp:
        workers = [ForkWorker(make_scratch(Path(tmp) / f"w{i}")) for i in range(max(1, args.jobs))]
        try:
            for config in chosen:
                t0 = time.monotonic()
                try:
                    only = None if survivors is None else survivors.get(config.path, set())
                    result = mutate_module(config, pytest_args, workers, equivalents.get(config.path, {}), args.mutant,
                                           only_keys=only)
                except ConfigError as exc:
                    print(f"mutation: {exc}", file=sys.stderr)
                    return 2
                results.append(result)
                print(f"  {config.path}: {result.mutants} mutants, {len(result.survivors)} survived, score "
                      f"{result.score:.1%} in {time.monotonic() - t0:.0f}s", file=sys.stderr, flush=True)
                for m in result.survivors:
                    print(f"    SURVIVED {config.path}:{m.line}  {m.key}", file=sys.stderr, flush=True)
        finally:
            for w in workers:
                w.close()

    ok = print_report(results)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds predict the wall time on an idle machine (about cpu / jobs) when it is shared.
    print(f"total {sum(r.mutants for r in results)} mutants in {time.monotonic() - started:.0f}s wall, "
          f"{usage.ru_utime + usage.ru_stime:.0f}s CPU of the test runs")
    if args.json:
        args.json.write_text(json.dumps([_as_json(r) for r in results], indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


def _choose(modules: dict[str, ModuleConfig], names: list[str] | None, ci: bool) -> list[ModuleConfig]:
    if names:
        unknown = [n for n in names if n not in modules]
        if unknown:
            raise ConfigError(f"not in config.toml: {', '.join(unknown)}")
        chosen = [modules[n] for n in names]
    else:
        chosen = [m for m in modules.values() if m.ci or not ci]
    for config in chosen:
        missing = [t for t in config.tests if not (REPO / t.split("::")[0]).exists()]
        if missing:
            raise ConfigError(f"{config.path}: selected test files missing: {', '.join(missing)}")
    return chosen


def _read_survivors(path: Path) -> dict[str, set[str]]:
    """module -> keys, from the ``SURVIVED module:line  key`` lines of a report."""
    keys: dict[str, set[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("SURVIVED "):
            where, _, key = line[len("SURVIVED "):].partition("  ")
            keys.setdefault(where.rpartition(":")[0], set()).add(key)
    return keys


def _as_json(r: ModuleResult) -> dict[str, object]:
    return {
        "module": r.path, "threshold": r.threshold, "mutants": r.mutants, "killed": r.killed, "timeouts": r.timeouts,
        "survived": [m.key for m in r.survivors], "equivalent": [m.key for m in r.equivalents],
        "score": round(r.score, 4),
    }


if __name__ == "__main__":
    raise SystemExit(main())
