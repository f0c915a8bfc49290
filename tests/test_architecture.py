"""The package's shape: no import circle, no upward import, no overlong module.

Layers (LAYERS, lowest first) follow docs/architecture.md: configuration, database, models,
ledger, documents, command line, with a base of helpers below them all. A module imports
only modules of its own layer or of a layer below it. Two placements differ from the data
flow the document draws, because imports follow who calls whom: ingest and load sit above
models and ledger (each write rebuilds the months it touched, so the writer calls the build),
and money (Decimal rounding, no I/O) sits in the base, since the configuration checks a
currency with it. Every import counts, at module level or inside a function: a
function-level import that goes up or round is the same dependency, only hidden. Within a
layer the imports must not form a circle either; the one circle allowed is a package
`__init__` importing its own submodules (which may import from it in turn).

Each module of the package is named in LAYERS (by its dotted name or a package prefix), so
a new module is placed on purpose. A module over MAX_LINES lines is a sign it holds more than
one thing; split it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yolocost

PACKAGE = Path(yolocost.__file__).resolve().parent
MAX_LINES = 700

# Lowest first. A name ending in "." stands for every module of that package.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # what every layer may use: errors, file locations, SQL literals, Decimal rounding, fixed
    # reference data, the run record's format, months (YYYY-MM), CSV cells, Ctrl-C and fork handling
    ("base", ("yolocost", "yolocost.errors", "yolocost.resources", "yolocost.sqltext", "yolocost.csvsafe",
              "yolocost.interrupts", "yolocost.forked", "yolocost.money", "yolocost.monthstr",
              "yolocost.gpumemory", "yolocost.runrecord",
              "yolocost.atomic")),  # replacing a file in one rename
    ("configuration", ("yolocost.config",)),
    ("database", ("yolocost.db",)),
    ("models", ("yolocost.models",)),
    # the ledger, and the record of which months are built with which settings (it reads both)
    ("ledger", ("yolocost.ledger", "yolocost.months")),
    # raw data in: each write rebuilds the models and the ledger of the months it touched
    ("ingest and load", ("yolocost.promql", "yolocost.promclient", "yolocost.storeprobe", "yolocost.attribution",
                         "yolocost.coverage", "yolocost.ingest", "yolocost.ingest.",
                         "yolocost.load", "yolocost.results_import")),
    ("documents", ("yolocost.outputs", "yolocost.tables", "yolocost.templating", "yolocost.queries", "yolocost.finance",
                   "yolocost.summary", "yolocost.whatif", "yolocost.estimate", "yolocost.report",
                   "yolocost.report.")),
    # what the commands drive: the synthetic sample, the benchmark runner, the commands, and the
    # windows and times their options name
    ("command line", ("yolocost.synth", "yolocost.synth.", "yolocost.bench", "yolocost.bench.",
                      "yolocost.demo", "yolocost.windows", "yolocost.monthly", "yolocost.cli", "yolocost.cli.",
                      "yolocost.__main__")),
]



def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports, anywhere in it (module level or in a function)."""
    package = name if _is_package(path) else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:  # `import yolocost.x.y` -> the deepest module
                    target = target.rpartition(".")[0]
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            if base not in known:
                continue
            for alias in node.names:  # `from pkg import sub` imports the submodule; else pkg itself
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def layer_of(name: str) -> int:
    best = None
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            exact = name == member
            within = member.endswith(".") and name.startswith(member)
            if exact or within:
                length = len(member) + (1 if exact else 0)  # an exact name beats a package prefix
                if best is None or length > best[0]:
                    best = (length, index)
    if best is None:
        raise AssertionError(f"{name} is in no layer: add it to LAYERS in {Path(__file__).name}")
    return best[1]


def _own_submodule(importer: str, imported: str, known: dict[str, Path]) -> bool:
    return importer in known and _is_package(known[importer]) and imported.startswith(importer + ".")


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan), ignoring a package
    __init__'s imports of its own submodules."""
    known = modules()
    kept = {a: {b for b in bs if not _own_submodule(a, b, known)} for a, bs in edges.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(kept.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.add(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(kept):
        if node not in index:
            visit(node)
    return groups


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_no_module_imports_a_higher_layer():
    known = modules()
    names = [n for n, _ in LAYERS]
    problems = [f"{a} ({names[layer_of(a)]}) imports {b} ({names[layer_of(b)]})"
                for a, bs in sorted(graph().items()) for b in sorted(bs)
                if layer_of(b) > layer_of(a) and not _own_submodule(a, b, known)]
    assert not problems, "upward imports:\n" + "\n".join(problems)


def test_no_import_circle():
    found = circles(graph())
    assert not found, f"import circles: {[sorted(g) for g in found]}"


def test_no_module_is_over_the_line_limit():
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    problems = [f"{name}: {n} lines" for name, n in sorted(lengths.items()) if n > MAX_LINES]
    assert not problems, f"modules over {MAX_LINES} lines: {problems}"


def test_the_graph_sees_function_level_and_relative_imports():
    """The walker finds what the rules depend on (a check that sees nothing passes too)."""
    edges = graph()
    assert "yolocost.ledger" in edges["yolocost.months"]  # `from . import ledger` inside a function
    assert "yolocost.report.trend" in edges["yolocost.report.data"]  # `from .trend import ...`
    assert "yolocost.errors" in edges["yolocost.bench.gpus"]  # `from ..errors import ...`
    assert circles({"a.x": {"a.y"}, "a.y": {"a.x"}}) == [{"a.x", "a.y"}]
