"""Each page of the guide (docs/guide/*.md) starts from a command a user can type: its first
code block holds a ``commtune`` line whose options commtune's own parser takes as printed
(what the command would then run needs a cluster; the page shows its output), and the
subcommand's ``--help`` runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from commtune.cli._app import build_parser, split_command

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide"
PAGES = sorted(GUIDE.glob("*.md"))


def first_command(page: Path) -> list[str]:
    """The first line of the page's first code block, continued over trailing backslashes,
    cut at a pipe and its comment dropped."""
    block = re.search(r"```\w*\n(.*?)```", page.read_text(), re.S)
    assert block is not None, f"{page.name} has no code block"
    text = block.group(1).replace("\\\n", " ").splitlines()[0]
    return shlex.split(text.split(" | ")[0], comments=True)


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_a_guide_page_starts_with_a_command_that_parses_as_printed(
    page: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = first_command(page)
    assert words[0] == "commtune", f"{page.name} starts with {words[0]}"
    own, _ = split_command(words[1:])
    args = build_parser().parse_args(own)  # SystemExit(2) on an option it does not take
    assert args.cmd == own[0]
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([own[0], "--help"])
    assert done.value.code == 0 and "usage: commtune " + own[0] in capsys.readouterr().out
