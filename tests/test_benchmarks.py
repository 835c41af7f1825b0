"""The benchmarks are instruments (issue 68): each script imports what it needs by name (run
as ``python benchmarks/NAME.py``, its folder is on the path: no ``sys.path`` edits), uses
only commtune's public modules, and reads commtune's ``--json`` answer through the one
helper ``benchmarks/instrument.py``; every script imports as it would run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.rglob("*.py"))


def test_no_script_edits_the_path_or_imports_a_private_module() -> None:
    edits, private, parses = [], [], []
    for path in SCRIPTS:
        text = path.read_text()
        name = str(path.relative_to(BENCHMARKS))
        if "sys.path.insert" in text or "sys.path.append" in text:
            edits.append(name)
        if re.search(r"^\s*(from|import) commtune(\.\w+)*\._\w+", text, re.M):
            private.append(name)
        if path.name != "instrument.py" and "splitlines()[-1])" in text and "json.loads" in text:
            parses.append(name)
    assert SCRIPTS and not edits and not private and not parses, (edits, private, parses)


def test_every_instrument_imports_as_it_runs() -> None:
    """Each script of benchmarks/ (not the investigations) imported by its file name, the
    way ``python benchmarks/NAME.py`` finds its neighbours, in one process."""
    names = [p.stem for p in SCRIPTS if p.parent == BENCHMARKS]
    code = ("import importlib, sys\n"
            f"sys.path.insert(0, {str(BENCHMARKS)!r})\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module(name)\n"
            "print(len(sys.modules))\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(names) > 20
