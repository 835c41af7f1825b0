"""The house rules that `lint-imports` (the layer contract in pyproject.toml) does not check:
no module reaches into another package's private modules, and only the vendor modules
branch on the MPI vendor."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import commtune
from commtune.mpi import Vendor

SRC = Path(commtune.__file__).parent


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    tree = ast.parse(path.read_text())
    return [
        (node.lineno, node.module, [a.name for a in node.names])
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("commtune")
    ]


def test_no_private_import_crosses_a_package() -> None:
    crossing = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC.parent).with_suffix("")
        here = _package(".".join(relative.parts))
        for line, module, names in _imports(path):
            there = _package(module)
            if there == here:
                continue
            private = [p for p in module.split(".")[2:] if p.startswith("_")]
            private += [n for n in names if n.startswith("_") and n != "__version__"]
            if private:
                crossing.append(f"{relative}:{line}: {module} {private}")
    assert crossing == []


def test_only_vendor_modules_branch_on_the_vendor() -> None:
    branch = re.compile(r"vendor\s*==|\.vendor\s+is\s+Vendor\.|vendor\s+is\s+Vendor\.")
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in SRC.rglob("*.py")
        if path.parent.name != "mpi"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if branch.search(line)
    ]
    assert found == []


def test_the_checks_see_a_violation(tmp_path: Path) -> None:
    """The private-import check is not vacuous: it parses imports where they are."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from commtune.knobs._discovery import discover\n")
    assert _imports(bad) == [(2, "commtune.knobs._discovery", ["discover"])]


VENDOR_WORDS = re.compile(
    r"openmpi|mpich|\bompi|mpir_|hydra|vader|open mpi|\bi_mpi_|intel|impi|libfabric"
    r"|smpi|simgrid",
    re.IGNORECASE,
)
# Modules outside mpi/ allowed to name a vendor, each with why (docs/architecture.md, "The
# layers", lists the same): the sampler of a simulator's ports of real libraries' collectives
# drives the simulator's own configuration names and nothing else; a knob family's module
# names its own layer (libfabric) or the component family it is of one library (OMPIO's)
VENDOR_WORD_EXCEPTIONS = {"sample/_simulated.py", "families/libfabric.py", "families/ompio.py"}


def _vendor_names(path: Path) -> list[str]:
    """Code (not docstrings or comments) in ``path`` that names a vendor: a ``Vendor``
    member, or a string with a vendor's name or one of its variable prefixes."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in {v.name for v in Vendor}:
            found.append(f"{node.lineno}: Vendor.{node.attr}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and VENDOR_WORDS.search(node.value)
        ):
            found.append(f"{node.lineno}: {node.value[:60]!r}")
    return sorted(found, key=lambda hit: int(hit.split(":")[0]))


def test_no_module_outside_mpi_names_a_vendor() -> None:
    """Vendor facts live on the vendor class (``mpi/``): a third library is one module there
    and its catalog, nothing else."""
    found = [
        f"{path.relative_to(SRC)}:{hit}"
        for path in sorted(SRC.rglob("*.py"))
        if path.parent.name != "mpi" and str(path.relative_to(SRC)) not in VENDOR_WORD_EXCEPTIONS
        for hit in _vendor_names(path)
    ]
    assert found == []


def test_the_vendor_name_check_sees_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        '"""Open MPI is fine here."""\nX = Vendor.MPICH\nY = ("OMPI_MCA_",)\n'
        'Z = "I_MPI_ROOT"\nW = "libfabric/fi_info"\nV = "--cfg=smpi/bcast:ompi"\n'
        'U = "SimGrid\'s trace"\n'
    )
    assert _vendor_names(bad) == [
        "2: Vendor.MPICH",
        "3: 'OMPI_MCA_'",
        "4: 'I_MPI_ROOT'",
        "5: 'libfabric/fi_info'",
        "6: '--cfg=smpi/bcast:ompi'",
        '7: "SimGrid\'s trace"',
    ]


def test_only_the_report_draws() -> None:
    """Working layers hand data to the report and never draw: matplotlib is imported only
    under report/."""
    drawing = [
        f"{path.relative_to(SRC)}"
        for path in sorted(SRC.rglob("*.py"))
        if path.parent.name != "report"
        and re.search(r"^\s*(import|from) matplotlib", path.read_text(), re.M)
    ]
    assert drawing == []
