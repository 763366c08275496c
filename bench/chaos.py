"""kill -9 campaign: runs killed at moments drawn uniformly over their whole life, then recovered.

    python -m bench.chaos --points 500 [--via cli|worker|api|cron|both|all] [--cluster]
        [--parallel 4] [--graphs gated|ungated|both] [--window whole|approval|after-write]

Each point is one thread on its own key prefix, with a gated or an ungated slow
external write (`bench.chaos_graphs`) and a scripted OpenAI-compatible model that
returns fresh tool-call ids every time it is asked, as real models do. The run goes
through the CLI (`graphwright run` / `resume`) or through `graphwright worker`;
the process is killed with SIGKILL at a moment drawn uniformly over the calibrated
length of the whole run (plan, the slow read, the write, checkpoint writes, the gate
and the approval), and with probability 0.3 the first recovery process is killed too.
Two more paths (`bench.chaos_paths`): `api`, a `runs.wait` executed in the API
process (`serve` without `--queue`), the API killed and a worker taking the run over
when its lease runs out; `cron`, a cron's run fired and executed by a worker that is
killed. `--cluster` runs every path on a 3-master Redis Cluster instead of one server.
A reviewer then settles the thread the way a person would: approve a pending write; for
an outcome_unknown call, look at the effect files and answer mark_done or retry.

Effects are counted outside Redis, one file per effect. Prints, per path: recovered %,
duplicate effects, lost acknowledged writes, outcome_unknown cases and how each was
settled, and where the kills landed. Commands run in processes forked from a
pre-imported server (multiprocessing's forkserver) so that a point costs a run, not an
interpreter start; each is still a separate process killed with SIGKILL.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import chaos_paths
from bench.chaos_model import ChaosModel
from bench.chaos_points import Point, Reviewer, classify, cli_child, wait_or_kill
from graphwright.testing.redis_servers import Server, start_cluster, start_server

CTX = multiprocessing.get_context("forkserver")
PATHS = {"worker": chaos_paths.via_worker, "api": chaos_paths.via_api, "cron": chaos_paths.via_cron}
VIAS = {"both": ["cli", "worker"], "all": ["cli", "worker", "api", "cron"]}


@dataclass
class Campaign:
    server: Server
    model: ChaosModel
    workdir: Path
    delay_s: float
    cluster: bool = False
    # "approval": every kill lands in the reviewer's approval; "after-write": within 0.5 s
    # of the approved write's record reading done
    window: str = "whole"
    spans: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def env(self, prefix: str, effects: Path) -> dict[str, str]:
        return {
            "REDIS_URL": self.server.url,
            "GRAPHWRIGHT_KEY_PREFIX": prefix,
            "GRAPHWRIGHT_REDIS_CLUSTER": "1" if self.cluster else "0",
            "GRAPHWRIGHT_CRON_TICK_S": "0.1",
            "GRAPHWRIGHT_CRON_LEASE_S": "2",
            "GRAPHWRIGHT_GRAPHS": "bench.chaos_graphs:register",
            "OPENAI_BASE_URL": self.model.base_url,
            "OPENAI_API_KEY": "chaos",
            "OPENAI_MODEL": "scripted",
            "OPENAI_MAX_RETRIES": "0",
            "CHAOS_EFFECTS": str(effects),
            "CHAOS_DELAY_S": str(self.delay_s),
            "GRAPHWRIGHT_CLAIM_IDLE_MS": "400",
            "GRAPHWRIGHT_HOME": str(self.workdir / "home"),
        }

    def spawn(self, argv: list[str], env: dict[str, str], out: Path) -> Any:
        proc = CTX.Process(target=cli_child, args=(argv, env, str(out)), daemon=False)
        proc.start()
        return proc


def run_point(c: Campaign, n: int, via: str, gated: bool, kill: bool, rng: random.Random) -> Point:
    graph = "chaos_gated" if gated else "chaos_ungated"
    prefix, thread = f"c{n}x{rng.randrange(10**9)}", f"p{n}"
    effects = c.workdir / prefix
    effects.mkdir()
    env = c.env(prefix, effects)
    point = Point(n=n, via=f"{via} (cluster)" if c.cluster else via, gated=gated, thread=thread)
    reviewer = Reviewer(c, point, env, effects, graph)
    spans = c.spans.get((via, graph), [5.0, 5.0])
    at = rng.uniform(0, sum(spans)) if kill else None
    in_approval = kill and gated and c.window != "whole"
    if in_approval:  # the run reaches its gate unharmed; the kill lands in the approval
        at = None
    started = time.monotonic()
    if via in PATHS:
        killed = PATHS[via](reviewer, at)
    else:
        proc = c.spawn(
            ["run", graph, "book the Aurora room", "--thread", thread, "--json"],
            env,
            effects / "run.out",
        )
        killed = wait_or_kill(proc, at)
    point.first_span = time.monotonic() - started
    if killed:
        point.where = classify(reviewer)
    elif in_approval and c.window == "after-write":
        point.where = reviewer.approve_and_kill_after_write(rng.uniform(0, 0.5))
    elif in_approval:
        point.where = reviewer.approve_and_kill(rng.uniform(0, spans[1]))
    elif gated and at is not None:  # the kill moment falls in the approval
        point.where = reviewer.approve_and_kill(at - point.first_span)
    reviewer.settle(rng, recovery_kill=kill and rng.random() < 0.3)
    if not point.ok:  # keep its command outputs and effect files for a post-mortem
        kept = Path(tempfile.gettempdir()) / "graphwright-chaos-failures" / prefix
        shutil.copytree(effects, kept, dirs_exist_ok=True)
        point.problem += f" (outputs kept in {kept})"
    return point


def calibrate(c: Campaign, vias: list[str]) -> None:
    """How long each kind of run takes uninterrupted: the span kill moments are drawn over."""
    rng = random.Random(0)
    warm = c.spawn(["--help"], {}, c.workdir / "warm.out")  # starts the fork server
    warm.join()
    for i, via in enumerate(vias * 2):  # the second round is the one kept
        for gated in (False, True):
            graph = "chaos_gated" if gated else "chaos_ungated"
            p = run_point(c, 10_000 + i * 10 + gated, via, gated, False, rng)
            c.spans[(via, graph)] = [p.first_span, p.approve_span]


def campaign(
    points: int,
    vias: list[str],
    parallel: int = 4,
    delay_s: float = 0.2,
    seed: int = 1,
    report: Callable[[str], None] = print,
    *,
    cluster: bool = False,
    graphs: str = "both",
    window: str = "whole",
) -> list[Point]:
    CTX.set_forkserver_preload(
        [
            "graphwright.cli",
            "bench.chaos_graphs",
            "bench.chaos_points",
            "langchain_openai",
            "graphwright.server.background.worker",
            "graphwright.server.app",
            "bench.chaos_warm",
        ]
    )
    with tempfile.TemporaryDirectory(prefix="gw-chaos-") as tmp:
        workdir = Path(tmp)
        servers = (
            start_cluster(workdir / "cluster")
            if cluster
            else [start_server(workdir / "redis", "--appendonly", "yes")]
        )
        server = servers[0]
        model = ChaosModel()
        try:
            c = Campaign(
                server=server,
                model=model,
                workdir=workdir,
                delay_s=delay_s,
                cluster=cluster,
                window=window,
            )
            calibrate(c, vias)
            report(
                "calibrated spans (s): "
                + ", ".join(
                    f"{via} {graph}: {' + '.join(f'{x:.2f}' for x in span)}"
                    for (via, graph), span in c.spans.items()
                )
            )
            rng = random.Random(seed)
            kinds = {"both": None, "gated": True, "ungated": False}[graphs]
            plan = [
                (
                    i,
                    vias[i % len(vias)],
                    (i // len(vias)) % 2 == 1 if kinds is None else kinds,
                    random.Random(rng.random()),
                )
                for i in range(points)
            ]
            done: list[Point] = []
            with ThreadPoolExecutor(max_workers=parallel) as pool:
                for p in pool.map(lambda a: run_point(c, a[0], a[1], a[2], True, a[3]), plan):
                    done.append(p)
                    if len(done) % 50 == 0:
                        report(f"{len(done)}/{points} points")
            return done
        finally:
            model.close()
            for s in servers:
                s.stop()


def table(points: list[Point]) -> str:
    rows = [
        "| path | points | recovered | duplicate effects | lost acknowledged writes | "
        "outcome_unknown surfaced | settled mark_done / retry | kills in recovery |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[str, list[Point]] = {}
    for p in points:
        groups.setdefault(f"{p.via} {'gated' if p.gated else 'ungated'}", []).append(p)
    groups["all"] = points
    for name, ps in groups.items():
        settled = Counter(s for p in ps for s in p.settled)
        rows.append(
            f"| {name} | {len(ps)} | {100 * sum(p.recovered for p in ps) / len(ps):.1f}% | "
            f"{sum(p.duplicates for p in ps)} | {sum(p.lost for p in ps)} | "
            f"{sum(p.unknowns for p in ps)} | {settled['mark_done']} / {settled['retry']} | "
            f"{sum(p.recovery_killed for p in ps)} |"
        )
    where = Counter(p.where for p in points)
    rows += ["", "| kill landed | points |", "|---|---|"]
    rows += [f"| {w} | {k} |" for w, k in where.most_common()]
    failures = [p for p in points if not p.ok]
    rows += ["", f"points not recovered exactly once: {len(failures)}"]
    rows += [
        f"  point {p.n} ({p.via}, {'gated' if p.gated else 'ungated'}, {p.where}): "
        f"{p.problem}; reviewer: {', '.join(p.commands) or '-'}"
        for p in failures[:20]
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument(
        "--via", choices=["cli", "worker", "api", "cron", "both", "all"], default="both"
    )
    parser.add_argument("--cluster", action="store_true", help="a 3-master Redis Cluster")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per slow tool step")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--graphs", choices=["both", "gated", "ungated"], default="both")
    parser.add_argument(
        "--window",
        choices=["whole", "approval", "after-write"],
        default="whole",
        help="where kills land: the whole run, the reviewer's approval, or just after the "
        "approved write was recorded (gated graph)",
    )
    args = parser.parse_args()
    vias = VIAS.get(args.via, [args.via])
    started = time.monotonic()
    points = campaign(
        args.points,
        vias,
        args.parallel,
        args.delay,
        args.seed,
        cluster=args.cluster,
        graphs=args.graphs,
        window=args.window,
    )
    print(table(points))
    print(f"\n{len(points)} points in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
