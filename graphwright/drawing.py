"""Draw a graph for review: Mermaid, ASCII, SVG (Graphviz) or one self-contained HTML page.

Nothing here touches the network: LangGraph's PNG helper calls a remote renderer by
default, so it is never used. The HTML page inlines the Mermaid library shipped in
`graphwright/assets`. With a thread, the visited nodes, the current node and a
pending gate are marked.
"""

from __future__ import annotations

import html
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Literal

from graphwright_errors import ConfigurationError, UserError

if TYPE_CHECKING:  # types only: the CLI's help lists FORMATS without loading LangGraph
    from langchain_core.runnables import RunnableConfig
    from langchain_core.runnables.graph import Graph as DrawableGraph
    from langgraph.graph.state import CompiledStateGraph

Format = Literal["mermaid", "ascii", "svg", "html"]
FORMATS: tuple[Format, ...] = ("mermaid", "ascii", "svg", "html")

STYLES = {
    "visited": "fill:#dbeafe,stroke:#1d4ed8",
    "current": "fill:#fde68a,stroke:#b45309,stroke-width:3px",
    "gate": "fill:#fecaca,stroke:#b91c1c,stroke-width:3px",
}


@dataclass(frozen=True)
class Path:
    """Where a thread has been and where it stands."""

    visited: list[str] = field(default_factory=list)
    current: list[str] = field(default_factory=list)
    gate: bool = False
    steps: list[str] = field(default_factory=list)  # every node run, in order, repeats kept

    def legend(self) -> str:
        parts = [
            f"visited: {', '.join(self.visited) or '-'}",
            f"steps: {' → '.join(self.steps) or '-'}",
            f"current: {', '.join(self.current) or 'finished'}",
        ]
        if self.gate:
            parts.append("pending gate: waiting for a decision")
        return "; ".join(parts)


def path_of(graph: CompiledStateGraph[Any, Any, Any, Any], config: RunnableConfig) -> Path:
    """The nodes a thread ran (from its checkpoints), the next ones, and whether a gate waits."""
    snapshots = list(graph.get_state_history(config))  # newest first
    if not snapshots:
        return Path()
    ran: list[str] = []
    for snap in reversed(snapshots[1:]):
        ran += snap.next
    latest = snapshots[0]
    visited = list(dict.fromkeys(ran))
    steps = [n for n in ran if n != "__start__"]
    return Path(
        visited=visited, current=list(latest.next), gate=bool(latest.interrupts), steps=steps
    )


def drawable(graph: CompiledStateGraph[Any, Any, Any, Any], *, xray: bool = True) -> DrawableGraph:
    """LangGraph's drawable graph; `xray` expands subgraphs (workers)."""
    return graph.get_graph(xray=xray)


def labelled(graph: CompiledStateGraph[Any, Any, Any, Any]) -> DrawableGraph:
    """The drawable graph with every conditional edge labelled by the branch that takes it.

    A router returning a `Literal` of node names has no path map, so LangGraph leaves
    its edges blank; the branch value is then the target's name.
    """
    g = drawable(graph)
    g.edges = [
        e._replace(data=e.data if e.data is not None else _branch(e.target)) if e.conditional else e
        for e in g.edges
    ]
    return g


def _branch(target: str) -> str:
    return "end" if target == "__end__" else target.split(":")[-1]


def mermaid(graph: CompiledStateGraph[Any, Any, Any, Any], path: Path | None = None) -> str:
    """The graph as Mermaid text, also written to `path` if given."""
    g = labelled(graph)
    text = g.draw_mermaid()
    if path is None:
        return text
    drawn = list(g.nodes)

    def shown(nodes: list[str]) -> list[str]:
        """The drawn nodes: a subgraph drawn expanded (xray) stands for its inner nodes."""
        out: list[str] = []
        for n in nodes:
            out += [n] if n in drawn else [d for d in drawn if d.startswith(f"{n}:")]
        return list(dict.fromkeys(out))

    path = Path(
        visited=shown(path.visited), current=shown(path.current), gate=path.gate, steps=path.steps
    )
    lines = [text.rstrip()]
    lines += [f"\tclassDef {name} {style};" for name, style in STYLES.items()]
    marks = {
        "visited": [n for n in path.visited if n not in path.current],
        "current": [] if path.gate else path.current,
        "gate": path.current if path.gate else [],
    }
    lines += [
        f"\tclass {','.join(map(_mermaid_id, nodes))} {name};"
        for name, nodes in marks.items()
        if nodes
    ]
    return "\n".join(lines) + "\n"


def _mermaid_id(node: str) -> str:
    r"""The id LangGraph's Mermaid output gives a node: other characters as `\<hex>`."""
    return "".join(
        ch if ch.isascii() and (ch.isalnum() or ch in "_-") else f"\\{ord(ch):x}" for ch in node
    )


def ascii_art(graph: CompiledStateGraph[Any, Any, Any, Any], path: Path | None = None) -> str:
    """The graph as ASCII art; self-loops, which the layout cannot draw, are listed below it."""
    g = labelled(graph)
    loops = [e for e in g.edges if e.source == e.target]  # the ASCII layout cannot draw these
    g.edges = [e for e in g.edges if e.source != e.target]
    text = g.draw_ascii()
    text += "".join(f"\n{e.source} ⟲ loops back to itself ({e.data})" for e in loops)
    return text + (f"\n{path.legend()}\n" if path else "\n")


def dot(graph: CompiledStateGraph[Any, Any, Any, Any], path: Path | None = None) -> str:
    """Graphviz DOT text: solid fixed edges, dashed conditional ones, colours for the path."""
    g = labelled(graph)
    fills = {"visited": "#dbeafe", "current": "#fde68a", "gate": "#fecaca"}
    lines = [
        "digraph G {",
        '  rankdir=TB; node [shape=box, style="rounded,filled", fillcolor=white];',
    ]
    for node_id in g.nodes:
        colour = "white"
        if path and node_id in path.current:
            colour = fills["gate" if path.gate else "current"]
        elif path and node_id in path.visited:
            colour = fills["visited"]
        lines.append(f'  "{node_id}" [label="{node_id}", fillcolor="{colour}"];')
    for edge in g.edges:
        style = "dashed" if edge.conditional else "solid"
        label = f', label="{edge.data}"' if edge.data is not None else ""
        lines.append(f'  "{edge.source}" -> "{edge.target}" [style={style}{label}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def svg(graph: CompiledStateGraph[Any, Any, Any, Any], path: Path | None = None) -> str:
    """The graph as SVG through Graphviz's `dot`, which must be installed."""
    binary = shutil.which("dot")
    if binary is None:
        raise ConfigurationError(
            "SVG needs Graphviz's `dot`, which is not installed; install the graphviz package "
            "(apt-get install graphviz, or brew install graphviz), or use --format html"
        )
    done = subprocess.run(
        [binary, "-Tsvg"],
        input=dot(graph, path),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        raise ConfigurationError(f"Graphviz failed: {done.stderr.strip()}")
    return done.stdout


@cache
def mermaid_library() -> str:
    """The bundled Mermaid script, so a drawn page needs no network."""
    return (files("graphwright") / "assets" / "mermaid.min.js").read_text(encoding="utf-8")


def page(graph: CompiledStateGraph[Any, Any, Any, Any], path: Path | None, title: str) -> str:
    """One HTML file that renders offline: the Mermaid library is inlined."""
    legend = f"<p class=legend>{html.escape(path.legend())}</p>" if path else ""
    # "</script" inside the inlined library would end the tag early.
    library = mermaid_library().replace("</script", "<\\/script")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · graphwright</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem}}.legend{{color:#444}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
{legend}
<pre class="mermaid">
{html.escape(mermaid(graph, path))}
</pre>
<script>{library}</script>
<script>mermaid.initialize({{startOnLoad: true, securityLevel: "strict"}});</script>
</body></html>
"""


def render(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    format: str,
    path: Path | None = None,
    *,
    title: str = "graph",
) -> str:
    """The graph in `format` (mermaid, ascii, svg or html), written to `path` if given."""
    if format == "mermaid":
        return mermaid(graph, path)
    if format == "ascii":
        return ascii_art(graph, path)
    if format == "svg":
        return svg(graph, path)
    if format == "html":
        return page(graph, path, title)
    raise UserError(f"unknown drawing format {format!r}; choose one of {', '.join(FORMATS)}")
