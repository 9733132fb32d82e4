"""The package's rooms import each other one way: the core never reaches into ros/, inference never into
training/, and the folders form no circle beyond the ones listed below (read from the source with ast, so
imports inside functions count too; ``if TYPE_CHECKING:`` imports do not run and do not count).

A room is a folder of embodied_ros/ (network, memory, ...) or a module at the top (mapper, pipeline, demo, ...).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "embodied_ros"

# Modules outside ros/ that may import it: the entry points that start ROS things, each with its reason.
ROS_ENTRY_POINTS = {
    "embodied_ros.cli.play": "`embodied-ros play` replays a recording onto ROS topics (ros/player.py), imported when "
                             "the parser is built (its options) and when run",
}

# Rooms that run a model or a map: they must work without the training code installed or imported.
INFERENCE_ROOMS = ("network", "runtime", "memory", "occupancy", "mapper", "pipeline")

# Imports between rooms that go against the data flow and close a circle, known today. Each entry is
# (importer, imported): why it is there and what would remove it. The test fails when an entry is no
# longer needed (so the list only shrinks) and when a new circle appears that it does not name. Empty since
# issue 44: a new entry needs its reason and what would remove it.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def package_imports(package: Path = PACKAGE) -> list[tuple[str, str, int]]:
    """(importer, imported module, line) for every import of the package's own modules, at any depth."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = _module_name(path, package)
        here = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(module, a.name, node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here.split(".")[: len(here.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # `from . import x`: x may be a module
                    found += [(module, f"{target}.{a.name}", node.lineno) for a in node.names]
                else:
                    found.append((module, target, node.lineno))
    return [(a, b, line) for a, b, line in found if b == package.name or b.startswith(package.name + ".")]


def room(module: str) -> str:
    """The folder under the package a module lives in, or the top-level module's own name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def room_edges(imports: list[tuple[str, str, int]]) -> dict[tuple[str, str], list[str]]:
    """{(importer room, imported room): ["module:line -> module", ...]} between different rooms."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for a, b, line in imports:
        if room(a) != room(b):
            edges[(room(a), room(b))].append(f"{a}:{line} -> {b}")
    return edges


def circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one room (Tarjan), each sorted."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted({a for e in edges for a in e}):
        if v not in index:
            visit(v)
    return sorted(found)


def test_nothing_outside_ros_imports_ros_but_the_listed_entry_points() -> None:
    bad = [f"{a}:{line} -> {b}" for a, b, line in package_imports()
           if room(b) == "ros" and room(a) != "ros" and a not in ROS_ENTRY_POINTS]
    assert bad == [], "the core imports the ROS edge:\n" + "\n".join(bad)


def test_inference_never_imports_training() -> None:
    bad = [f"{a}:{line} -> {b}" for a, b, line in package_imports()
           if room(a) in INFERENCE_ROOMS and room(b) == "training"]
    assert bad == [], "inference imports the training code:\n" + "\n".join(bad)


def test_no_circle_among_rooms_but_the_listed_upward_imports() -> None:
    edges = room_edges(package_imports())
    left = circles(set(edges) - set(ALLOWED_UPWARD))
    detail = "\n".join(f"{a} -> {b}: {edges[(a, b)][0]}" for c in left for a, b in sorted(edges) if {a, b} <= set(c))
    assert left == [], f"rooms that import each other in a circle: {left}\n{detail}"


def _reaches(edges: set[tuple[str, str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        here = todo.pop()
        for a, b in edges:
            if a == here and b not in seen:
                seen.add(b)
                todo.append(b)
    return goal in seen


def test_every_listed_exception_is_still_needed() -> None:
    """The lists only shrink: an upward import that no longer closes a circle, or an entry point that no longer
    imports ros/, is removed from them."""
    imports = package_imports()
    edges = set(room_edges(imports))
    stale = [edge for edge in sorted(ALLOWED_UPWARD) if edge not in edges or not _reaches(edges, edge[1], edge[0])]
    stale += sorted(set(ROS_ENTRY_POINTS) - {a for a, b, _ in imports if room(b) == "ros"})
    assert stale == [], f"no longer needed, remove from the lists: {stale}"


def test_the_reader_sees_function_level_relative_and_type_checking_imports(tmp_path: Path) -> None:
    """Known answers on a small package: what the guards above rest on."""
    pkg = tmp_path / "embodied_ros"
    (pkg / "network").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "network" / "__init__.py").write_text("from . import registry\n")
    (pkg / "network" / "registry.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..mapper import X\n"
        "def f():\n    from ..training.trainer import load\n    import embodied_ros.ros.node\n")
    found = {(a, b) for a, b, _ in package_imports(pkg)}
    assert found == {("embodied_ros.network", "embodied_ros.network.registry"),
                     ("embodied_ros.network.registry", "embodied_ros.training.trainer"),
                     ("embodied_ros.network.registry", "embodied_ros.ros.node")}
    assert circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert circles({("a", "b"), ("b", "c")}) == []
