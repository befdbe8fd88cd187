"""The house's floor plan, checked from the source: which package may import what.

* ``perfcmp.base`` (``compare/base/``) is the ground floor: it imports nothing else of perfcmp;
* ``perfcmp.results`` (``compare/results/``), the result types, stand on it: they import only
  ``perfcmp.base``, each other and msgspec (so never pandas or numpy);
* renderers only format: ``compare/render`` never imports the engines (verdict, scope, samples,
  pipeline, history);
* no ``_private`` name of one package is used from another (imported, or reached as an attribute
  of an imported module);
* processes are started in one module (``perfcmp.base.procs``), and file formats (SQLite, gzip)
  are known only under ``readers/``;
* the peer's sheet names are declared by the dimensions only (analysis keys tables by dimension
  and role).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"compare": "perfcmp", "readers": "perfcmp.readers", "report_templates": "perfcmp.report_templates"}


def module_name(path: Path) -> str:
    """``compare/render/xlsx.py`` -> ``perfcmp.render.xlsx`` (the package-dir mapping of pyproject)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join([PACKAGES[parts[0]], *(p for p in parts[1:] if p != "__init__")])


def sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def perfcmp_imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported perfcmp name) for each import in ``path``, lazy ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perfcmp"):
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("perfcmp")]
    return found


def package_of(name: str, is_package: bool = False) -> str:
    return name if is_package else name.rsplit(".", 1)[0]


def test_the_ground_floor_imports_nothing_else_of_perfcmp():
    outside = [(p.name, line, name) for p in sources("compare/base") for line, name in perfcmp_imports(p)
               if not name.startswith("perfcmp.base")]
    assert outside == []


# Names a result module may use in annotations only (under ``if TYPE_CHECKING``), never at run
# time: the workbook layout's sheet spec (a cluster rank's prepared sheets).
TYPE_ONLY = {"perfcmp.templates.SheetSpec"}
# The pair result's methods are its Python API (``result.table()``, ``.write()``, ``.check()``...):
# they reach the engines by imports inside the methods, never when the module is imported.
FACADES = {"pair.py"}

def runtime_imports(path: Path, lazy: bool = True) -> list[tuple[int, str]]:
    """(line, top-level module or perfcmp name) of each import in ``path`` outside an
    ``if TYPE_CHECKING:`` block, lazy ones (inside functions) included unless ``lazy`` is False."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for stmt in block.body for n in ast.walk(stmt)}
    in_functions = set() if lazy else {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                                       for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only or id(node) in in_functions:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            perfcmp = node.module.startswith("perfcmp")
            found += [(node.lineno, f"{node.module}.{a.name}" if perfcmp else node.module.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name if a.name.startswith("perfcmp") else a.name.split(".")[0]) for a in node.names]
    return found


def test_result_types_import_only_the_ground_floor_each_other_and_msgspec():
    allowed = re.compile(r"^(perfcmp\.(base|results)\b|msgspec$)")
    outside = [(p.name, line, name) for p in sources("compare/results")
               for line, name in runtime_imports(p, lazy=p.name not in FACADES)
               if not (allowed.match(name) or name in sys.stdlib_module_names)]
    assert outside == []
    lazy = {(p.name, line) for p in sources("compare/results") if p.name in FACADES
            for line, _ in set(runtime_imports(p)) - set(runtime_imports(p, lazy=False))}
    annotations = {name for p in sources("compare/results") for line, name in perfcmp_imports(p)
                   if (p.name, line) not in lazy and not re.match(r"^perfcmp\.(base|results)\b", name)}
    assert annotations <= TYPE_ONLY


def test_importing_a_result_type_loads_neither_pandas_nor_numpy():
    modules = [module_name(p) for p in sources("compare/results")]
    code = (f"import sys\nfor m in {modules!r}: __import__(m)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'numpy') or "
            "(m.startswith('perfcmp.') and not m.startswith(('perfcmp.base', 'perfcmp.results')))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_renderers_do_not_import_the_engines():
    engines = re.compile(r"^perfcmp\.(verdict|scope|samples|pipeline|history)\b")
    found = [(str(p.relative_to(ROOT)), line, name) for p in sources("compare/render")
             for line, name in perfcmp_imports(p) if engines.match(name)]
    assert found == []


def test_no_private_name_is_used_across_packages():
    crossings = []
    for path in sources("compare", "readers"):
        me = module_name(path)
        home = package_of(me, path.name == "__init__.py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {}  # local name -> the perfcmp module or name it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perfcmp"):
                for a in node.names:
                    modules[a.asname or a.name] = f"{node.module}.{a.name}"
                    if _private(a.name) and package_of(node.module) != home:
                        crossings.append((str(path.relative_to(ROOT)), node.lineno, f"{node.module}.{a.name}"))
            elif isinstance(node, ast.Import):
                modules.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("perfcmp")})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in modules and package_of(modules[node.value.id]) != home):
                crossings.append((str(path.relative_to(ROOT)), node.lineno, f"{modules[node.value.id]}.{node.attr}"))
    assert crossings == []


def test_processes_are_started_in_one_module():
    starts = re.compile(r"\bos\.fork\(|ProcessPoolExecutor|\bimport multiprocessing\b|subprocess\.Popen")
    found = sorted({str(p.relative_to(ROOT)) for p in sources("compare", "readers") if starts.search(p.read_text(encoding="utf-8"))})
    assert found == ["compare/base/procs.py"]


def test_file_formats_are_known_only_under_readers():
    formats = re.compile(r"\bimport sqlite3\b|\bimport gzip\b|\\x1f\\x8b|SQLite format 3")
    found = [str(p.relative_to(ROOT)) for p in sources("compare") if formats.search(p.read_text(encoding="utf-8"))]
    assert found == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_peer_sheet_names_are_declared_by_the_dimensions_only():
    """Analysis code keys tables by dimension and role; the peer's sheet names (which the JSON
    document and the workbook keep) are string constants only in the dimension modules that
    declare them (``Dimension.tables``) — the workbook reads them from ``sheets.toml``."""
    from perfcmp.dimensions import peer_names

    names = set(peer_names().values())
    found = [(str(p.relative_to(ROOT)), node.lineno, node.value) for p in sources("compare", "readers")
             if "dimensions" not in p.relative_to(ROOT).parts
             for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and node.value in names]
    assert found == []
