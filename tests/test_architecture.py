"""The package's shape, read from its source: each layer imports only the layers below it, no
module imports itself round a cycle (imports inside functions included), no private name is used
from another module, and no function is too long to read at once."""

from __future__ import annotations

import ast
from pathlib import Path

import avrmp

ROOT = Path(avrmp.__file__).parent
# Lowest first; a module may import from its own layer and the layers before it.
LAYERS = [
    ["avrmp", "avrmp.errors", "avrmp.output_files", "avrmp.progress"],
    ["avrmp.target"],
    ["avrmp.program"],
    ["avrmp.regalloc"],
    ["avrmp.blocks"],
    ["avrmp.tuning"],
    ["avrmp.techniques"],
    ["avrmp.spec", "avrmp.routine"],
    ["avrmp.verify"],
    ["avrmp.bench"],
    ["avrmp.library"],
    ["avrmp.cli", "avrmp.entry", "avrmp.__main__"],
]
MAX_FUNCTION_LINES = 80


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> int:
    best = max((len(prefix), i) for i, names in enumerate(LAYERS) for prefix in names
               if module == prefix or module.startswith(prefix + "."))
    return best[1]


def resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[tuple[str, list[str]]]:
    """(imported avrmp module, names taken from it) for one import statement."""
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names if a.name.split(".")[0] == "avrmp"]
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    base = package
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    target = node.module if node.level == 0 else ".".join(x for x in (base, node.module) if x)
    if target.split(".")[0] != "avrmp":
        return []
    out = [(target, [])]
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        if sub in MODULES:
            out.append((sub, []))  # `from package import module`
        else:
            out[0][1].append(alias.name)
    return out


def imports() -> dict[str, list[tuple[str, list[str], int]]]:
    graph = {}
    for module, path in MODULES.items():
        edges = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges += [(t, names, node.lineno) for t, names in resolve(module, node)]
        graph[module] = edges
    return graph


GRAPH = imports()


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        assert layer(module) >= 0


def test_layers_import_only_downwards() -> None:
    wrong = [f"{m}:{line} imports {t}" for m, edges in GRAPH.items() for t, _, line in edges
             if layer(t) > layer(m)]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t, _, _ in GRAPH.get(m, []):
            t = t if t in MODULES else t.rpartition(".")[0]
            if state.get(t) == 1:
                cycle = path[path.index(t):] + [t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in MODULES:
        if m not in state:
            visit(m)


def test_no_private_name_used_across_modules() -> None:
    wrong = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases = {}
        for t, names, line in GRAPH[module]:
            wrong += [f"{module}:{line} imports {t}.{n}" for n in names
                      if n.startswith("_") and not n.startswith("__")]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases.update({(a.asname or a.name): a.name for a in node.names})
            elif isinstance(node, ast.ImportFrom):
                for t, _ in resolve(module, node):
                    aliases.update({(a.asname or a.name): t for a in node.names
                                    if f"{t}" in MODULES and t.endswith("." + a.name)})
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in aliases and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                wrong.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not wrong, "\n".join(wrong)


def test_functions_are_short() -> None:
    long = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{module}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "\n".join(long)
