"""Every COMMTUNE_* setting of the tuner is read in settings.py alone and listed in the user's
docs (docs/guide/settings.md, which the README links)."""

from __future__ import annotations

import ast
from pathlib import Path

import commtune
from commtune import settings

SRC = Path(commtune.__file__).parent
README = Path(__file__).parent.parent / "docs" / "guide" / "settings.md"


def _reads(path: Path) -> list[str]:
    """``COMMTUNE_*`` names ``path`` reads from the environment (os.environ.get, os.getenv,
    os.environ[...])."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        args: list[ast.expr] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("get", "getenv") and node.args:
                args = [node.args[0]]
        elif (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) == "os.environ"
            and isinstance(node.ctx, ast.Load)
        ):
            args = [node.slice]
        found += [
            a.value
            for a in args
            if isinstance(a, ast.Constant)
            and isinstance(a.value, str)
            and a.value.startswith("COMMTUNE_")
        ]
    return found


def test_no_module_but_settings_reads_a_commtune_variable() -> None:
    found = {
        str(path.relative_to(SRC)): names
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "settings.py" and (names := _reads(path))
    }
    assert found == {}


def test_every_setting_is_in_the_settings_guide() -> None:
    text = README.read_text()
    assert [s.name for s in settings.SETTINGS if f"`{s.name}`" not in text] == []


def test_the_reader_check_sees_a_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('import os\nA = os.environ.get("COMMTUNE_X")\nB = os.environ["COMMTUNE_Y"]\n')
    assert _reads(bad) == ["COMMTUNE_X", "COMMTUNE_Y"]
