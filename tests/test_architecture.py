"""The package's shape, read from its source with :mod:`ast` (nothing is imported).

* no import cycles between ``nx_gsm`` modules, counting imports inside functions too (a lazy
  import still ties the two modules together);
* no module imports another's private names (``from .x import _name`` or ``x._name``): a name
  another module uses is package API and carries no underscore;
* the package never imports the repository's tooling packages ``benchmarks`` and ``gpu`` (an
  installed package does not have them);
* no Python file in the package is longer than :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nx_gsm"
TOOLING = ("benchmarks", "gpu")
MAX_LINES = 900


@functools.cache
def _modules(package):
    """{module name: (path relative to the package's parent, parsed tree)} for every Python
    file under ``package``."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent)
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = (rel, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return out


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _from_base(modules, module, node):
    """The module an ``ImportFrom`` in ``module`` reads from (relative imports resolved)."""
    if not node.level:
        return node.module
    package = module if modules[module][0].name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _imports(modules, module):
    """(line, imported module, names taken from it, local bindings) for every import statement
    in ``module``, at any depth; the names are those of ``from X import a, b`` that are not
    submodules, the bindings map a local name to the module it is bound to."""
    for node in ast.walk(modules[module][1]):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.partition(".")[0]
                yield node.lineno, a.name, [], {a.asname: a.name} if a.asname else {top: top}
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(modules, module, node)
            names = []
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in modules:  # ``from . import faults``: the submodule itself
                    yield node.lineno, sub, [], {a.asname or a.name: sub}
                else:
                    names.append(a.name)
            if names:
                yield node.lineno, base, names, {}


def _graph(modules):
    """{module: {imported package module: line of the first such import}}."""
    edges = {m: {} for m in modules}
    for m in modules:
        for line, target, _, _ in _imports(modules, m):
            if target in modules and target != m:
                edges[m].setdefault(target, line)
    return edges


def _cycles(edges):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on_stack.discard(comp[-1])
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def _dotted(node):
    """``a.b.c`` as ["a", "b", "c"]; None for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def _private_uses(modules, module):
    """Where ``module`` takes a private name of another module of the package."""
    found, bindings = [], {}
    for line, target, names, bound in _imports(modules, module):
        bindings.update({k: v for k, v in bound.items() if v in modules})
        if target in modules and target != module:
            found += [f"line {line}: from {target} import {n}" for n in names if _is_private(n)]
            if _is_private(target.rpartition(".")[2]):
                found.append(f"line {line}: imports the private module {target}")
    for node in ast.walk(modules[module][1]):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            path = _dotted(node.value)
            if path and path[0] in bindings:
                target = ".".join([bindings[path[0]], *path[1:]])
                if target in modules and target != module:
                    found.append(f"line {node.lineno}: {'.'.join(path)}.{node.attr}")
    return found


def _tooling_imports(modules, module):
    """Where ``module`` imports a tooling package, by a statement or by name."""
    found = [f"line {line}: imports {target}"
             for line, target, _, _ in _imports(modules, module)
             if target and target.partition(".")[0] in TOOLING]
    for node in ast.walk(modules[module][1]):
        if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and (_dotted(node.func) or [""])[-1] in ("import_module", "__import__")
                and node.args[0].value.partition(".")[0] in TOOLING):
            found.append(f"line {node.lineno}: imports {node.args[0].value!r} by name")
    return found


def _long_files(modules, package):
    lines = {rel: len((package.parent / rel).read_text(encoding="utf-8").splitlines())
             for rel, _ in modules.values()}
    return {str(rel): n for rel, n in lines.items() if n > MAX_LINES}


def _report(modules, check):
    return [f"{modules[m][0]}: {use}" for m in modules for use in check(modules, m)]


def test_no_import_cycles():
    modules = _modules(PACKAGE)
    edges = _graph(modules)
    cycles = _cycles(edges)
    msg = ["cycle: " + "; ".join(f"{a} -> {b} (line {edges[a][b]})"
                                 for a in comp for b in sorted(edges[a]) if b in comp)
           for comp in cycles]
    assert not cycles, "\n".join(msg)


def test_no_cross_module_private_names():
    found = _report(_modules(PACKAGE), _private_uses)
    assert not found, f"{len(found)} private names used across modules:\n" + "\n".join(found)


def test_package_never_imports_the_tooling():
    found = _report(_modules(PACKAGE), _tooling_imports)
    assert not found, "\n".join(found)


def test_no_file_over_the_line_limit():
    long = _long_files(_modules(PACKAGE), PACKAGE)
    assert not long, f"files over {MAX_LINES} lines: {long}"


def test_the_checks_find_what_they_look_for(tmp_path):
    # a made-up package with one offence of each kind, and look-alikes that are none
    pkg = tmp_path / "nx_gsm"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from .b import _hidden, __version__\n\n\ndef f():\n    from . import c\n",
        "b.py": "_hidden = 1\nimport benchmarks.report\nfrom .sub.d import shown\n",
        "c.py": "from . import a\nfrom .sub import d\nx = d._secret\nimport importlib\n"
                "importlib.import_module('gpu.check')\ny = a._own\n",
        "sub/__init__.py": "import numpy as np\nz = np._private\n",
        "sub/d.py": "_secret = 2\nshown = 3\n" + "pass\n" * MAX_LINES,
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    modules = _modules(pkg)
    assert set(modules) == {"nx_gsm", "nx_gsm.a", "nx_gsm.b", "nx_gsm.c", "nx_gsm.sub",
                            "nx_gsm.sub.d"}
    assert _cycles(_graph(modules)) == [["nx_gsm.a", "nx_gsm.c"]]
    assert _report(modules, _private_uses) == [
        "nx_gsm/a.py: line 1: from nx_gsm.b import _hidden",
        "nx_gsm/c.py: line 3: d._secret",
        "nx_gsm/c.py: line 6: a._own",
    ]
    assert _report(modules, _tooling_imports) == [
        "nx_gsm/b.py: line 2: imports benchmarks.report",
        "nx_gsm/c.py: line 5: imports 'gpu.check' by name",
    ]
    assert _long_files(modules, pkg) == {"nx_gsm/sub/d.py": MAX_LINES + 2}
