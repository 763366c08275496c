"""A LangGraph project described by `langgraph.json`: its graphs, env, dependencies, store.

Graphs are read the way `langgraph dev` reads them (`./path.py:attr` or
`module:attr`; a compiled graph, a `StateGraph`, a functional `@entrypoint` or a
factory taking a `RunnableConfig` or nothing) and compiled with graphwright's Redis
saver and store instead of the in-memory ones.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.store.base import IndexConfig, TTLConfig
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphwright.graphs.context import Graph, GraphContext
from graphwright.graphs.hitl_guard import guarded
from graphwright.graphs.registry import GraphRegistry
from graphwright.project_keys import refusal
from graphwright.tools.approvals import Approvals
from graphwright.tools.registry import ToolRegistry
from graphwright_errors import ConfigurationError

DECISION_TTL_S = 30 * 24 * 3600  # a recorded HITL verdict lives as long as a tool record

log = logging.getLogger(__name__)


class StoreConfig(BaseModel):
    """`langgraph.json`'s `store`: its index and TTL, other keys kept as given."""

    model_config = ConfigDict(extra="allow")

    index: dict[str, Any] | None = None
    ttl: dict[str, Any] | None = None


class CheckpointerConfig(BaseModel):
    """`langgraph.json`'s `checkpointer`: its TTL, other keys kept as given."""

    model_config = ConfigDict(extra="allow")

    ttl: dict[str, Any] | None = None  # {"default_ttl": minutes, "strategy": "delete", ...}


class HttpConfig(BaseModel):
    """The `http` section, as the reference reads it.

    CORS, a user's app mounted beside the API, a path prefix for the API, switches that leave
    resources out, and the request headers copied into a run's `configurable`.
    """

    model_config = ConfigDict(extra="allow")

    app: str | None = None  # `./path.py:app`: a Starlette or FastAPI app
    cors: dict[str, Any] | None = None
    mount_prefix: str | None = None
    disable_assistants: bool = False
    disable_threads: bool = False
    disable_runs: bool = False
    disable_store: bool = False
    disable_meta: bool = False
    disable_mcp: bool = False  # no /mcp
    disable_a2a: bool = False  # no /a2a nor agent cards
    disable_webhooks: bool = False  # webhooks of runs are not called
    configurable_headers: dict[str, Any] | None = None


class AuthConfig(BaseModel):
    """The `auth` section: the `langgraph_sdk.Auth` object at `path` decides who calls."""

    model_config = ConfigDict(extra="allow")

    path: str | None = None  # `./auth.py:auth` (relative to the project) or `module:auth`
    disable_studio_auth: bool = False  # graphwright has no Studio bypass: always as if true


class ProjectConfig(BaseModel):
    """The parts of `langgraph.json` graphwright reads.

    Before it is read, `project_keys` refuses a key graphwright does not implement, so none is
    ignored.
    """

    model_config = ConfigDict(extra="allow")

    graphs: dict[str, str | dict[str, Any]] = Field(min_length=1)
    dependencies: list[str] = Field(default_factory=list)
    env: str | dict[str, str] | None = None
    store: StoreConfig | None = None
    checkpointer: CheckpointerConfig | None = None
    http: HttpConfig = Field(default_factory=HttpConfig)
    auth: AuthConfig | None = None
    disable_persistence: bool = False


class Project:
    """One loaded `langgraph.json`; paths in it are relative to its folder."""

    def __init__(self, path: Path, config: ProjectConfig) -> None:
        self.path = path
        self.root = path.parent
        self.config = config

    @property
    def graphs(self) -> dict[str, str]:
        """Graph id to `./path.py:attr` or `module:attr`."""
        return {
            name: spec if isinstance(spec, str) else str(spec.get("path", ""))
            for name, spec in self.config.graphs.items()
        }

    def env(self) -> dict[str, str]:
        """The project's environment: the mapping, or the variables of its env file."""
        env = self.config.env
        if env is None or isinstance(env, dict):
            return dict(env or {})
        return read_env_file(self.root / env)

    def apply(self) -> None:
        """Put the env into `os.environ` (set variables win) and the dependencies on sys.path."""
        for key, value in self.env().items():
            os.environ.setdefault(key, value)
        for dep in reversed(self.config.dependencies):
            if dep.startswith((".", "/")):  # a local package; other entries are pip requirements
                folder = str((self.root / dep).resolve())
                if folder not in sys.path:
                    sys.path.insert(0, folder)

    def checkpoint_ttl_s(self) -> int | None:
        ttl = (self.config.checkpointer.ttl if self.config.checkpointer else None) or {}
        minutes = ttl.get("default_ttl")
        return int(float(minutes) * 60) if minutes is not None else None

    def store_ttl(self) -> TTLConfig | None:
        ttl = self.config.store.ttl if self.config.store else None
        return cast(TTLConfig, ttl) if ttl else None

    def store_index(self) -> IndexConfig | None:
        index = dict(self.config.store.index or {}) if self.config.store else {}
        if not index:
            return None
        embed = index.get("embed")
        if isinstance(embed, str) and ":" in embed and (embed.startswith(".") or ".py:" in embed):
            index["embed"] = load_attribute(embed, self.root)  # a function of the project
        elif isinstance(embed, str) and not _importable("langchain"):
            raise ConfigurationError(
                f"store.index.embed {embed!r} is a provider string, which LangGraph builds with "
                "the langchain package: install it (pip install langchain), or name a "
                "function of the project as ./embed.py:embed"
            )
        return cast(IndexConfig, index)

    def auth_path(self) -> str | None:
        """The `auth.path` entry, a file's part made absolute (relative to the project)."""
        target = self.config.auth.path if self.config.auth else None
        if not target:
            return None
        where, sep, name = target.rpartition(":")
        if sep and where.endswith(".py"):
            return f"{(self.root / where).resolve()}:{name}"
        return target

    def user_app(self) -> Any:
        """The app `http.app` names, loaded from the project; None without one."""
        return load_attribute(self.config.http.app, self.root) if self.config.http.app else None

    def register(self, registry: GraphRegistry) -> None:
        """Register every graph under its id; each takes its own input."""
        for name, target in self.graphs.items():
            value = load_attribute(target, self.root)
            refuse_runtime_factory(name, value)
            entry = self.config.graphs[name]
            described = entry.get("description") if isinstance(entry, dict) else None
            registry.register(
                name,
                _builder(name, value),
                description=str(described or ""),
                tools=ToolRegistry,
                make_input=None,
                per_config=takes_config(value),
            )


def load_project(path: str | os.PathLike[str]) -> Project:
    """Read and validate a `langgraph.json`; what graphwright cannot serve is refused by name."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(raw, dict) and (reason := refusal(raw)) is not None:
            raise ConfigurationError(f"{path}: {reason}")
        return Project(path.resolve(), ProjectConfig.model_validate(raw))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "top level"
        raise ConfigurationError(f"{path}: {where}: {first['msg']}") from exc


def read_env_file(path: Path) -> dict[str, str]:
    """`KEY=value` lines; blank lines, comments and `export` prefixes are allowed.

    A file that is not there reads as no variables, with a warning, as `langgraph dev`
    reads it: LangGraph's templates name `.env` (git-ignored, made from `.env.example`)
    and a fresh clone has none, its keys coming from the environment instead.
    """
    if not path.is_file():
        log.warning("the project's env file %s does not exist; no variables are read from it", path)
        return {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"the project's env file cannot be read: {exc}") from exc
    out: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        out[key.strip()] = value.strip().strip("'\"")
    return out


def load_attribute(target: str, root: Path) -> Any:
    """The attribute named by `./path.py:attr` (relative to `root`) or `module:attr`."""
    where, _, attr = target.rpartition(":")
    if not where or not attr:
        raise ConfigurationError(f"graph {target!r}: write it as ./path.py:attr or module:attr")
    module = _import_file(root / where, where) if where.endswith(".py") else _import(where)
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise ConfigurationError(f"{where} has no attribute {attr!r} (from {target!r})") from exc


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(
            f"module {name!r} cannot be imported: {exc}; list its folder "
            "under dependencies in langgraph.json"
        ) from exc


def _import_file(path: Path, shown: str) -> ModuleType:
    # One module per file: two projects' ./graph.py must not share a cached module.
    tag = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
    name = f"gw_project_{tag}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ConfigurationError(f"graph file {path} does not exist")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        del sys.modules[name]
        raise ConfigurationError(f"{shown} cannot be imported: {exc}") from exc
    return module


def _builder(name: str, value: Any) -> Callable[[GraphContext], Graph]:
    def build(ctx: GraphContext) -> Graph:
        return compile_graph(name, value, ctx)

    return build


def compile_graph(name: str, value: Any, ctx: GraphContext) -> Graph:
    """The graph `value` stands for, with graphwright's checkpointer and store."""
    if not isinstance(value, Pregel | StateGraph) and callable(value):
        value = _call_factory(name, value, ctx)
    approvals = Approvals(ctx.redis_client, ctx.keys, ttl_s=DECISION_TTL_S)
    if isinstance(value, StateGraph):  # a HITL middleware's verdicts are checked at tool time
        return cast(
            Graph,
            guarded(
                value.compile(checkpointer=ctx.checkpointer, store=ctx.store, name=name), approvals
            ),
        )
    if isinstance(value, Pregel):
        update: dict[str, Any] = {"checkpointer": ctx.checkpointer, "store": ctx.store}
        if value.name == "LangGraph":
            update["name"] = name
        return cast(Graph, guarded(value.copy(update=update), approvals))
    raise ConfigurationError(
        f"graph {name!r} is a {type(value).__name__}, not a graph, a "
        "StateGraph or a factory returning one"
    )


RUN_KEYS = ("thread_id", "checkpoint_id", "checkpoint_ns", "run_id", "gw_fence")


def run_configurable(config: RunnableConfig | None) -> dict[str, Any]:
    """The `configurable` values a factory may build from: not the per-run bookkeeping."""
    given = (config or {}).get("configurable") or {}
    return {k: v for k, v in given.items() if k not in RUN_KEYS and not k.startswith("__")}


def takes_config(value: Any) -> bool:
    """Whether `value` is a factory called with the run's config."""
    if isinstance(value, Pregel | StateGraph) or not callable(value):
        return False
    try:
        return bool(inspect.signature(value).parameters)
    except (TypeError, ValueError):
        return False


def _call_factory(name: str, factory: Callable[..., Any], ctx: GraphContext) -> Any:
    config: RunnableConfig = {"configurable": dict(ctx.configurable or {})}
    result = factory(config) if takes_config(factory) else factory()
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    if not isinstance(result, Pregel | StateGraph) and (
        hasattr(result, "__aenter__") or hasattr(result, "__enter__")
    ):
        raise ConfigurationError(
            f"graph {name!r}: its factory returns a context manager, which "
            "graphwright does not enter; return the graph itself"
        )
    return result


def refuse_runtime_factory(name: str, value: Any) -> None:
    """Refuse by name a factory the reference calls with a `ServerRuntime` (or two arguments).

    graphwright calls a factory with the run's config or with nothing.
    """
    if isinstance(value, Pregel | StateGraph) or not callable(value):
        return
    try:
        params = list(inspect.signature(value).parameters.values())
    except (TypeError, ValueError):
        return
    wanted = [p for p in params if p.default is inspect.Parameter.empty]
    if len(wanted) > 1 or any("ServerRuntime" in str(p.annotation) for p in params):
        raise ConfigurationError(
            f"graph {name!r}: a factory taking a ServerRuntime (or two arguments) is not "
            "supported by graphwright; take the config (a RunnableConfig) or nothing"
        )


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


async def _await(value: Any) -> Any:
    return await value
