"""The packages of croqvm are layers (docs/ARCHITECTURE.md "Where things live"): a module
imports from its own package and the packages below it, never from one above, except where
the architecture note says why."""
from __future__ import annotations

import ast
from pathlib import Path

import croqvm

LAYERS = ("core", "lang", "bytecode", "reports", "interp", "native", "cuda", "running",
          "debug", "trace", "sweep", "cli")
# the engines call C++ device functions built by the CUDA path's host compiler;
# Program.trace runs croqvm trace
UPWARD = {("croqvm/interp/cxxcall.py", "cuda"), ("croqvm/native/driver.py", "cuda"),
          ("croqvm/running/program.py", "trace")}
ROOT = Path(croqvm.__file__).parent


def imported_packages(path: Path):
    """Every croqvm package that ``path`` imports from."""
    package = path.relative_to(ROOT.parent).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - node.level + 1])
                names = [base + (node.module or "").split(".")] if node.module else \
                    [base + [alias.name] for alias in node.names]
            else:
                names = [node.module.split(".")]
        elif isinstance(node, ast.Import):
            names = [alias.name.split(".") for alias in node.names]
        else:
            continue
        for parts in names:
            if parts[0] == "croqvm" and len(parts) > 1 and parts[1] in LAYERS:
                yield parts[1]


def test_no_package_imports_from_a_layer_above_it():
    upward = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        package = path.relative_to(ROOT).parts[0]
        if package not in LAYERS:
            continue
        name = str(path.relative_to(ROOT.parent))
        for target in imported_packages(path):
            if LAYERS.index(target) > LAYERS.index(package) and (name, target) not in UPWARD:
                upward.append(f"{name} imports croqvm.{target}")
    assert upward == []


def test_the_top_of_the_package_is_the_api_alone():
    assert sorted(p.name for p in ROOT.glob("*.py")) == ["__init__.py", "__main__.py"]
