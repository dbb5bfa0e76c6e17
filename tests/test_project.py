"""Project-wide rules of DESIGN.md: the layering of the four packages, and ruff-clean code."""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["props", "gendef", "parsers", "msgcap"]


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", LAYERS)
def test_each_package_imports_only_the_layers_before_it(package):
    forbidden = set(LAYERS[LAYERS.index(package) + 1:])
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & forbidden)
        for path in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def _module_imports() -> dict[str, set[str]]:
    """Each module of the layers → the modules of the layers it imports (anywhere in it, a
    function's deferred import too), packages only where no submodule is meant."""
    paths = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in paths.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = {f"{node.module}.{alias.name}" for alias in node.names} & paths.keys()
                found.update(subs or {node.module})
        graph[name] = {m for m in found & paths.keys() if not name.startswith(m + ".")}
    return graph


def test_no_module_imports_itself_through_others():
    """An import cycle (even one deferred into a function) makes a module unusable alone and
    its import order fragile."""
    graph = _module_imports()
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            pytest.fail("import cycle: " + " → ".join((*path[path.index(name):], name)))
        if name not in done:
            for dep in sorted(graph[name]):
                visit(dep, (*path, name))
            done.add(name)
    for name in sorted(graph):
        visit(name, ())


def test_only_the_spark_facing_batch_modules_import_pyspark():
    importers = {path.name for path in (ROOT / "msgcap" / "batch").glob("*.py")
                 if _imported_packages(path) & {"pyspark", "py4j"}}
    assert importers == {"jobs.py", "session.py"}


def test_lower_layers_import_without_pyspark_or_stomp():
    code = ("import sys, props.settings, gendef.build, gendef.copybook, parsers.base, "
            "parsers.delim, parsers.fixed, parsers.xml, msgcap.cli\n"
            "assert 'pyspark' not in sys.modules and 'stomp' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.skipif(shutil.which("ruff") is None and not Path(sys.executable).with_name("ruff").exists(),
                    reason="ruff is not installed")
def test_ruff_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    result = subprocess.run([ruff, "check", "--no-cache", "props", "gendef", "parsers", "msgcap",
                             "bench", "tests"], check=False, cwd=ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_clean():
    """mypy over the four packages, as [tool.mypy] in pyproject.toml says (its cache in the
    git-ignored .mypy_cache: a warm run takes about a second, a cold one some fifteen)."""
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], check=False,
                            cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr


# pip's report of this machine's own package-index configuration, not of the project
_INDEX_CONFIG = re.compile(r"WARNING: Location '.*' is ignored: it is neither a file nor a "
                           r"directory\.$")


def test_editable_install_prints_no_warnings(tmp_path):
    """scripts/env.sh (scripts/demo.sh, scripts/test.sh) installs msgcap editable with this pip;
    setuptools must have nothing to warn about (a deprecated pyproject field, an editable-install
    notice), so that the demo's first lines are the demo."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                           "install", "-q", "--no-deps", "--disable-pip-version-check", "-e",
                           str(ROOT)], capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines()
            if line.strip() and not _INDEX_CONFIG.match(line)]
    assert said == []
