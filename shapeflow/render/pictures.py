"""Pictures of a model: ``infer --format dot`` (Graphviz) and ``--format graphml``.

Both are drawn from the networkx graph of ``shapeflow.drivers.netx``, whole or a neighbourhood: the nodes
within ``depth`` tensor hops of the nodes named with ``--around`` or of the nodes with findings
(``--findings``). Initializers are left out of the DOT picture (weights and shared axes tensors
would be most of it; the values that matter are on the edges) and are never walked through when
a neighbourhood is selected (one axes tensor shared by every Unsqueeze would make everything a
neighbour); GraphML keeps those that feed a selected node.

In DOT, edges are labelled with their symbolic shapes (and small known values such as axes and
shape vectors; a dim that only the file's declaration states is marked ``~``, as in ``infer``),
Squeeze/Unsqueeze nodes are drawn bold with their axes as written (the wrong ones included:
``axes [1, -3]`` on the node SF102 flags; a normalised form that reads differently follows,
``axes [-1] = [2]``; ``axes ?`` only for axes computed at run time), and nodes with
findings are filled by their highest severity and list their codes. Subgraphs and function
bodies are clusters. A picture of more than ``max_draw`` nodes is refused (exit 2) with a pointer
to ``--around``: a 100k-node drawing is a useless file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from ..declared import marked_dim
from ..errors import UsageError, display_path
from ..drivers.netx import KIND_INITIALIZER, KIND_INPUT, KIND_NODE, KIND_OUTPUT, graphml_text, to_networkx

if TYPE_CHECKING:
    import networkx as nx

    from ..drivers.analysis import Analysis

DEFAULT_MAX_DRAW = 2000
DEFAULT_DEPTH = 2
FORMATS = ("dot", "graphml")
# Known values up to this many elements are shown on DOT edges (axes, shape vectors).
MAX_VALUE_IN_LABEL = 8

# severity -> (fill, outline) of a node with findings
SEVERITY_COLORS = {"error": ("#f8b4b4", "#b00020"), "warning": ("#fcd9a0", "#b7791f"),
                   "info": ("#c6e2f7", "#2b6cb0")}
AXIS_FILL = "#e3f0e3"  # Squeeze/Unsqueeze without findings
AXIS_OPS = ("Squeeze", "Unsqueeze")


@dataclass(frozen=True)
class PictureOptions:
    around: tuple[str, ...] = ()  # node names (or keys) to draw the neighbourhood of
    depth: int = DEFAULT_DEPTH  # tensor hops from them, either direction
    findings: bool = False  # draw the neighbourhood of the nodes with findings
    max_draw: int = DEFAULT_MAX_DRAW

    @property
    def selective(self) -> bool:
        return bool(self.around) or self.findings


def picture(analysis: "Analysis", fmt: str, options: PictureOptions = PictureOptions()) -> str:
    """The DOT or GraphML text of ``analysis`` (the whole model or the selected neighbourhood).
    Raises ``UsageError`` (exit 2) for unknown names in ``around`` and for a picture larger than
    ``max_draw`` nodes."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown picture format '{fmt}' (dot or graphml)")
    if not options.selective and analysis.graph.node_count() > options.max_draw:
        # refused before the networkx graph is built: on a large model that is most of the time
        _too_large(analysis, analysis.graph.node_count(), options)
    g = to_networkx(analysis)
    keep = select(g, options, file=analysis.path)
    drawn = keep if fmt == "graphml" else [n for n in keep if g.nodes[n]["kind"] != KIND_INITIALIZER]
    if len(drawn) > options.max_draw:
        _too_large(analysis, len(drawn), options)
    sub = g.subgraph(keep) if len(keep) < g.number_of_nodes() else g
    if fmt == "graphml":
        return graphml_text(sub.copy())
    return to_dot(sub, title=analysis.path)


def _too_large(analysis: "Analysis", count: int, options: PictureOptions) -> None:
    what = "the neighbourhood has" if options.selective else "the model has"
    fix = ("lower --depth or name fewer nodes" if options.selective
           else "draw a part with --around NODE[,NODE...] [--depth K] or --findings")
    raise UsageError(f"{what} {count:,} nodes to draw, more than --max-draw {options.max_draw:,}: "
                     f"{fix} (or raise --max-draw)", file=analysis.path)


def resolve(g: "nx.MultiDiGraph", names: Iterable[str], file: str | None = None) -> list[str]:
    """The node keys that ``names`` designate: a key (``main/sq_3``) or the name of a node, graph
    input or graph output in any graph (``#N`` is the unnamed node N of the main graph, as
    diagnostics name it). Raises ``UsageError`` naming every name that matches nothing."""
    by_name: dict[str, list[str]] = {}
    for n, a in g.nodes(data=True):
        if a["kind"] != KIND_INITIALIZER:
            name = a["name"] or ""
            if a["kind"] == KIND_NODE and not name:
                name = f"#{a['index']}" if a["graph"] == "main" else ""
            if name:
                by_name.setdefault(name, []).append(n)
    found: list[str] = []
    unknown: list[str] = []
    for name in names:
        if name in g:
            found.append(name)
        elif name in by_name:
            found.extend(by_name[name])
        else:
            unknown.append(name)
    if unknown:
        raise UsageError("unknown node" + ("s" if len(unknown) > 1 else "") + " in --around: "
                         + ", ".join(f"'{display_path(u)}'" for u in unknown), file=file)
    return found


def neighbourhood(g: "nx.MultiDiGraph", seeds: Sequence[str], depth: int) -> set[str]:
    """``seeds`` and every node within ``depth`` tensor hops of them, in either direction, not
    walking through initializers; then the initializers that feed a node of the result."""
    seen = set(seeds)
    frontier = list(seeds)
    for _ in range(max(depth, 0)):
        nxt: list[str] = []
        for n in frontier:
            for m in (*g.pred[n], *g.succ[n]):
                if m not in seen and g.nodes[m]["kind"] != KIND_INITIALIZER:
                    seen.add(m)
                    nxt.append(m)
        frontier = nxt
        if not frontier:
            break
    for n in list(seen):
        for m in g.pred[n]:
            if g.nodes[m]["kind"] == KIND_INITIALIZER:
                seen.add(m)
    return seen


def select(g: "nx.MultiDiGraph", options: PictureOptions, file: str | None = None) -> list[str]:
    """The nodes to draw, in the graph's order."""
    if not options.selective:
        return list(g.nodes)
    seeds = resolve(g, options.around, file) if options.around else []
    if options.findings:
        seeds += [n for n, a in g.nodes(data=True) if a.get("findings")]
    keep = neighbourhood(g, list(dict.fromkeys(seeds)), options.depth)
    return [n for n in g.nodes if n in keep]


# -- DOT --------------------------------------------------------------------------------------------


def _esc(text: str) -> str:
    """Text for a double-quoted DOT string: printable (names come from the model), with
    backslashes and quotes escaped so that Graphviz shows them as they are."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text.replace("\\", "\\\\").replace('"', '\\"')


def dim_text(d: object) -> str:
    return "?" if d is None else str(d)


def shape_text(shape: object, declared: object = None) -> str:
    """A JSON shape (``[2, "batch", null]``; None for unknown rank) as ``[2, batch, ?]``; with the
    file's ``declared`` shape, the dims only it states marked as ``infer`` marks them (``~4``)."""
    if isinstance(declared, list):
        if not isinstance(shape, list):
            return "~[" + ", ".join(dim_text(d) for d in declared) + "]"
        if len(declared) == len(shape):
            return "[" + ", ".join(dim_text(d) if d is not None else marked_dim(w)
                                   for d, w in zip(shape, declared)) + "]"
    if not isinstance(shape, list):
        return "?"
    return "[" + ", ".join(dim_text(d) for d in shape) + "]"


def edge_label(attrs: dict[str, object]) -> str:
    label = shape_text(attrs.get("shape"), attrs.get("declared_shape"))
    value = attrs.get("value")
    if isinstance(value, list) and len(value) <= MAX_VALUE_IN_LABEL:
        label += "\n= [" + ", ".join(dim_text(v) for v in value) + "]"
    return label


def axes_label(written: object, normalised: object) -> str:
    """``axes [1, -3]``: the axes as the model writes them (``none`` when it has none, ``?`` when
    they are known only at run time), then their normalised form when that reads differently."""
    def text(axes: object) -> str:
        return "[" + ", ".join(map(str, axes)) + "]" if isinstance(axes, list) else "?"

    if written == "none":
        return "axes none"
    label = "axes " + text(written)
    if isinstance(normalised, list) and isinstance(written, list) and normalised != written:
        label += " = " + text(normalised)
    return label


def _node_style(a: dict[str, object]) -> tuple[str, dict[str, str]]:
    """(label, DOT attributes) of one node."""
    kind = a["kind"]
    style: dict[str, str] = {}
    if kind == KIND_NODE:
        name = str(a["name"]) or f"#{a['index']}"
        op = str(a["op_type"])
        if a.get("domain"):
            op = f"{a['domain']}::{op}"
        if a.get("version") is not None:
            op += f"-{a['version']}"
        lines = [name, op]
        if a["op_type"] in AXIS_OPS and not a.get("domain"):
            lines.append(axes_label(a.get("written_axes", a.get("axes")), a.get("axes")))
            style.update(style="rounded,filled,bold", fillcolor=AXIS_FILL, penwidth="2")
    else:
        lines = [f"{kind} {a['name']}"]
        style.update(shape="ellipse" if kind == KIND_INPUT else "doubleoctagon" if kind == KIND_OUTPUT
                     else "note", fillcolor="#eeeeee")
    severity = a.get("severity")
    if isinstance(severity, str) and severity in SEVERITY_COLORS:
        fill, line = SEVERITY_COLORS[severity]
        codes = a.get("findings")
        lines.append(f"{severity} " + " ".join(str(c) for c in (codes if isinstance(codes, list) else [])))
        style.update(fillcolor=fill, color=line, penwidth="3")
        if kind == KIND_NODE:
            style["style"] = "rounded,filled,bold"
    return "\n".join(lines), style


def _attr_list(attrs: dict[str, str]) -> str:
    return ", ".join(f'{k}="{_esc(v)}"' if k != "label" else f'label="{v}"' for k, v in attrs.items())


def _label(text: str) -> str:
    """A DOT label: each line escaped, joined by Graphviz's centred line break."""
    return "\\n".join(_esc(line) for line in text.split("\n"))


def to_dot(g: "nx.MultiDiGraph", title: str = "") -> str:
    """The DOT text of ``g`` (a graph from ``to_networkx``, or a subgraph of one). Initializers
    are left out; node ids are ``n0, n1, ...`` in the graph's order, each with its key as tooltip."""
    ids: dict[str, str] = {}
    clusters: dict[str, list[str]] = {}
    lines = [
        "digraph shapeflow {",
        f'  graph [rankdir=TB, fontname="Helvetica", labelloc=t, label="{_esc(title)}"];',
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9, color="#555555"];',
    ]
    for n, a in g.nodes(data=True):
        if a["kind"] == KIND_INITIALIZER:
            continue
        nid = ids[n] = f"n{len(ids)}"
        label, style = _node_style(a)
        style = {"label": _label(label), "tooltip": n, **style}
        statement = f"{nid} [{_attr_list(style)}];"
        graph = str(a["graph"])
        if graph == "main":
            lines.append("  " + statement)
        else:
            clusters.setdefault(graph, []).append(statement)
    for k, (graph, statements) in enumerate(clusters.items()):
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f'    graph [label="{_esc(graph)}", style=dashed, color="#888888"];')
        lines.extend("    " + s for s in statements)
        lines.append("  }")
    for u, v, a in g.edges(data=True):
        if u not in ids or v not in ids:
            continue
        style = {"label": _label(edge_label(a)), "tooltip": str(a.get("tensor", ""))}
        if a.get("outer"):
            style["style"] = "dashed"
        lines.append(f"  {ids[u]} -> {ids[v]} [{_attr_list(style)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
