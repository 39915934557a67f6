"""The house (issue 36): no import circles between modules, and every import points down the layers
load -> facts -> scenarios -> engine -> report -> diff / units -> scheduler -> job -> pipeline -> cli. Imports
inside functions count: a lazy import is still an arrow."""
import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "nsys_expert"
# top-level module or package of nsys_expert -> its layer (an arrow may stay in its layer or go down)
LAYERS = {"nsys_expert": 0, "errors": 0, "notes": 0, "textsafe": 0, "safe_open": 0, "cache": 0, "config": 0, "budget": 0,
          "reads": 0,
          "load": 1, "facts": 2, "scenarios": 3, "engine": 4, "report": 5, "diff": 6, "units": 6,
          "scheduler": 7, "job": 8, "pipeline": 9, "cli": 10, "__main__": 10}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        name = ".".join(p.with_suffix("").relative_to(ROOT.parent).parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _from_base(node: ast.ImportFrom, pkg: str) -> str:
    """The absolute module a ``from ... import`` names (relative levels resolved against ``pkg``)."""
    base = node.module or ""
    if node.level:
        up = pkg
        for _ in range(node.level - 1):
            up = up.rsplit(".", 1)[0]
        base = up + ("." + node.module if node.module else "")
    return base


def _edges(mods):
    edges = collections.defaultdict(set)
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = _from_base(node, pkg)
                for a in node.names:
                    targets.append(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in mods and t != m:
                    edges[m].add(t)
    return edges


def _layer(m: str) -> int:
    parts = m.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else "nsys_expert"]


def test_every_module_has_a_layer():
    assert {m.split(".")[1] for m in _modules() if "." in m} - set(LAYERS) == set()


def test_no_import_circles():
    mods = _modules()
    edges = _edges(mods)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):   # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(mods):
        if v not in index:
            visit(v)
    assert found == []


def test_imports_point_down():
    mods = _modules()
    up = sorted((a, b) for a, ts in _edges(mods).items() for b in ts if _layer(b) > _layer(a))
    assert up == []


def _private_uses(mods):
    """(module, where from, name) for each private name (``_x``, not ``__x__``) one module of the package takes
    from another: ``from .other import _x``, or ``other._x`` where ``other`` names a module it imported."""
    out = []
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        tree = ast.parse(p.read_text(encoding="utf-8"))
        aliases = {}                     # a local name -> the package module it is
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _from_base(node, pkg)
                for a in node.names:
                    if f"{base}.{a.name}" in mods:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
                    elif base in mods and base != m and a.name.startswith("_") and not a.name.startswith("__"):
                        out.append((m, base, a.name))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and aliases[node.value.id] != m and node.attr.startswith("_") and not node.attr.startswith("__")):
                out.append((m, aliases[node.value.id], node.attr))
    return sorted(set(out))


def test_no_private_name_crosses_modules():
    """A module's private names (``_x``) stay in it (issue 59, item 5). A name another module needs is public
    (named for what it is), or the code moves to where it belongs: a module cut in two for its size, whose
    halves share private helpers, shows up here; a package by concept, with its public surface in its
    ``__init__``, is the way out (``load/sqlite/``, ``engine/conditions/``)."""
    assert _private_uses(_modules()) == []


def test_the_check_sees_a_private_import(tmp_path):
    (tmp_path / "a.py").write_text("def _x():\n    return 1\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("from .a import _x\nfrom . import a\ny = a._x() + _x()\n", encoding="utf-8")
    mods = {"pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    assert _private_uses(mods) == [("pkg.b", "pkg.a", "_x")]


def test_every_package_is_installed():
    """A package folder missing from pyproject.toml's list installs only in editable mode (a wheel lacks it)."""
    import tomllib

    listed = set(tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT.parent).parts) for p in ROOT.rglob("__init__.py")}
    assert found - listed == set()
