"""Evidence of the one lifecycle: the modules that write a run's status or meta (the
fields of the thread's meta hash that describe its run: `run_meta.RUN_FIELDS`), found by
reading the source, are one: `graphwright/run_meta.py`.

A write is a call of the meta hash's writers (`ThreadMeta.write` on any `meta`,
`RunWrites.write` on any `writes`, `update_meta`, `_set_meta`) or of a Redis hash write on
`keys.meta(...)`, naming a run field by keyword, in a `**{...}` literal or in a mapping
literal. `ThreadMeta` and `RunWrites` are the storage under it (they write the fields they
are given, naming none).
"""

from __future__ import annotations

import ast

from graphwright.run_meta import RUN_FIELDS
from tests.support.paths import ROOT

SOURCE = ROOT / "graphwright"
META_WRITERS = {"write", "update_meta", "_set_meta"}
HASH_WRITES = {"hset", "hsetex", "hmset", "fenced_hset"}
HOPS = {"to_thread", "offload", "run_in_executor"}  # calls that make the call they are given
CONSTANTS = {"MODEL_FAILED": "model_failed", "FIELD": "summary"}  # names of field names


def field_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return CONSTANTS.get(node.id)
    if isinstance(node, ast.Attribute):
        return CONSTANTS.get(node.attr)
    return None


def named_fields(call: ast.Call) -> set[str]:
    """The field names a call writes, as far as its literals tell."""
    names = {kw.arg for kw in call.keywords if kw.arg}
    literals = [kw.value for kw in call.keywords if isinstance(kw.value, ast.Dict)]
    literals += [arg for arg in call.args if isinstance(arg, ast.Dict)]
    for literal in literals:
        names |= {name for key in literal.keys if (name := field_name(key))}
    names |= {name for arg in call.args if (name := field_name(arg))}
    return {n for n in names if n}


def receiver(call: ast.Call) -> str:
    func = call.func
    return ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""


def writes_run_meta(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in HOPS and call.args:
        # asyncio.to_thread(meta.write, tid, fence, status=...): the write is its first argument
        call = ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords)
        func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in META_WRITERS:
        if name == "write" and not receiver(call).endswith(("meta", "writes")):
            return False  # a file, a stream, a trace: not the thread's meta hash
    elif name in HASH_WRITES:
        if "keys.meta(" not in ast.unparse(call):
            return False
    else:
        return False
    return bool(named_fields(call) & RUN_FIELDS)


def writers() -> dict[str, list[int]]:
    """Each module that writes a run's status or meta, with the lines that do."""
    found: dict[str, list[int]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and writes_run_meta(node):
                found.setdefault(str(path.relative_to(SOURCE.parent)), []).append(node.lineno)
    return found


def test_one_module_writes_a_runs_status_and_meta() -> None:
    found = writers()
    assert list(found) == ["graphwright/run_meta.py"], found


def test_the_scan_sees_a_write() -> None:
    """The scan is not blind: each form of write it looks for is found."""
    calls = [
        'self.meta.write(tid, fence, status="failed")',
        "orch._set_meta(tid, graph=name)",
        "meta.write(tid, fence, **{MODEL_FAILED: at})",
        'client.hset(keys.meta(tid), mapping={"status": "running"})',
        'client.hset(keys.meta(tid), "remember", "")',
        'asyncio.to_thread(self.meta.write, tid, fence, status="failed")',
        'await self.writes.write(tid, fence, {"status": "failed"})',
        "await orch.run_writes.write(tid, fence, {MODEL_FAILED: at})",
    ]
    for text in calls:
        call = ast.parse(text).body[0]
        assert isinstance(call, ast.Expr)
        value = call.value.value if isinstance(call.value, ast.Await) else call.value
        assert isinstance(value, ast.Call)
        assert writes_run_meta(value), text
    unrelated = ast.parse('self.tracer.write(tid, status="x")').body[0]
    assert isinstance(unrelated, ast.Expr) and isinstance(unrelated.value, ast.Call)
    assert not writes_run_meta(unrelated.value)


def test_no_module_reaches_into_the_orchestrators_private_members() -> None:
    """The run path calls the Orchestrator's public face (`Lifecycle`, `graph_for`,
    `meta`), never `orch._set_meta`, `_alock`, `_graph` and the like."""
    found: list[str] = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and ast.unparse(node.value) in ("orch", "self.orch", "launch.orch")
            ):
                found.append(f"{path.relative_to(SOURCE.parent)}:{node.lineno} {node.attr}")
    assert found == []
