"""How fast the CLI starts: each command's wall time over repeated runs, against `python -c pass`.

    python -m bench.startup [--runs N] [--baseline DIR]

Starts its own redis-server with one finished thread, then runs every command N times
(default 7) in rounds, so a change of load touches every command alike. Prints min,
median and max seconds, the median's ratio to `python -c pass` of the same run, the
issue's target where there is one, and how many modules `import graphwright` loads.
With `--baseline DIR` (another checkout, e.g. `git archive main | tar -x -C DIR`),
every command also runs with DIR first on `PYTHONPATH`, in the same rounds, and the
median's ratio to it is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphwright.orchestrator import Orchestrator
from graphwright.settings import Settings
from graphwright.testing.redis_servers import start_server

CLI = str(Path(sys.executable).with_name("graphwright"))
THREAD = "bench-startup"
COMMANDS: dict[str, tuple[list[str], float | None]] = {  # name: (argv, target in seconds)
    "python -c pass": ([sys.executable, "-c", "pass"], None),
    "import graphwright": ([sys.executable, "-c", "import graphwright"], 0.5),
    "graphwright --help": ([CLI, "--help"], 0.3),
    "graphwright show T": ([CLI, "show", THREAD], 1.0),
    "graphwright threads": ([CLI, "threads"], None),
    "graphwright trace T": ([CLI, "trace", THREAD], None),
    "graphwright history T": ([CLI, "history", THREAD], None),
    "graphwright draw agent": ([CLI, "draw", "agent"], None),
}


def timed(argv: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def module_count() -> int:
    code = "import sys; n = len(sys.modules); import graphwright; print(len(sys.modules) - n)"
    return int(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="a checkout to compare against")
    args = parser.parse_args()
    runs, baseline = args.runs, args.baseline
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp))
        try:
            env = {
                k: v
                for k, v in os.environ.items()
                if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHWRIGHT_CONFIG")
            }
            env.update(REDIS_URL=server.url, GRAPHWRIGHT_KEY_PREFIX="bench", GRAPHWRIGHT_HOME=tmp)
            orch = Orchestrator(
                settings=Settings(
                    _env_file=None,
                    REDIS_URL=server.url,  # type: ignore[call-arg]
                    GRAPHWRIGHT_KEY_PREFIX="bench",
                )
            )
            orch.invoke("agent", "What is 2 + 2?", thread_id=THREAD)
            orch.client.close()
            samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
            before: dict[str, list[float]] = {name: [] for name in COMMANDS}
            old_env = {**env, "PYTHONPATH": str(baseline.resolve())} if baseline else env
            for _ in range(runs):
                for name, (argv, _target) in COMMANDS.items():
                    samples[name].append(timed(argv, env, tmp))
                    if baseline is not None:
                        before[name].append(timed(argv, old_env, tmp))
        finally:
            server.stop()
    base = statistics.median(samples["python -c pass"])
    print(f"{runs} runs each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"{'command':24} {'min s':>7} {'median s':>9} {'max s':>7} {'x pass':>7} {'target s':>9}"
        + (f" {'baseline s':>11} {'x baseline':>11}" if baseline else "")
    )
    for name, (_argv, target) in COMMANDS.items():
        s = samples[name]
        median = statistics.median(s)
        line = (
            f"{name:24} {min(s):7.3f} {median:9.3f} {max(s):7.3f} {median / base:7.1f} "
            f"{'' if target is None else f'{target:.1f}':>9}"
        )
        if baseline is not None:
            old = statistics.median(before[name])
            line += f" {old:11.3f} {median / old:11.2f}"
        print(line)
    print(f"import graphwright loads {module_count()} modules")


if __name__ == "__main__":
    main()
