"""The README's and the guides' command lines as a newcomer types them (issue 76): every
``commtune`` line of their code blocks parses with the real command line, and the README's
walkthrough runs as printed on this machine, in a fresh directory, after ``make demo``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from commtune.cli._app import build_parser, split_command

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]


def blocks(page: Path) -> list[tuple[str, list[str]]]:
    """The fenced code blocks of ``page``: (the language word, its lines joined where a line
    ends in a backslash)."""
    out: list[tuple[str, list[str]]] = []
    lines: list[str] | None = None
    language = ""
    for raw in page.read_text().splitlines():
        if raw.startswith("```"):
            if lines is None:
                lines, language = [], raw[3:].strip()
            else:
                out.append((language, lines))
                lines = None
            continue
        if lines is not None:
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + raw.strip()
            else:
                lines.append(raw)
    return out


def commands(page: Path) -> list[str]:
    """Every line of a code block that starts with ``commtune``, its comment cut off."""
    found = []
    for _, lines in blocks(page):
        for line in lines:
            text = line.strip()
            if text.startswith("commtune "):
                words = shlex.split(text, comments=True)
                cut = next((i for i, w in enumerate(words) if w in ("|", ">", ">>", "&&", ";")),
                           len(words))  # fmt: skip
                found.append(shlex.join(words[:cut]))  # the shell's redirections are not ours
    return found


def walkthrough() -> list[str]:
    """The README's ``sh`` block under "## Use": the lines a newcomer types."""
    text = (ROOT / "README.md").read_text()
    use = text[text.index("## Use") :]
    page = ROOT / "README.md"
    for language, lines in blocks(page):
        if language == "sh" and lines and lines[0] in use:
            return [line for line in lines if line.strip()]
    raise AssertionError("README.md has no sh block under ## Use")


def test_every_command_line_of_the_readme_and_the_guides_parses() -> None:
    """A flag renamed or a choice dropped shows here, not in a newcomer's terminal."""
    parser = build_parser()
    seen = 0
    for page in PAGES:
        for line in commands(page):
            own, _ = split_command(shlex.split(line)[1:])
            if any(w in ("--help", "-h") for w in own):
                continue
            try:
                parser.parse_args(own)
            except SystemExit:
                pytest.fail(f"{page.name}: {line!r} does not parse")
            seen += 1
    assert seen >= 25, seen


def test_the_walkthrough_is_the_readme_block_it_claims() -> None:
    lines = walkthrough()
    assert lines[0].startswith(". .venv/bin/activate")
    assert any("commtune demo --build app" in line for line in lines)
    assert any("--twin" in line for line in lines)


@pytest.mark.mpi
@pytest.mark.openmpi
@pytest.mark.smpi
@pytest.mark.timeout(900)
def test_the_readme_walkthrough_runs_as_printed(tmp_path: Path) -> None:
    """Each line of the README's walkthrough, in order, in a fresh directory where
    ``.venv`` is this checkout's (what ``make demo`` made): every one exits 0, and what it
    says it writes is there."""
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    env = dict(os.environ)  # the suite's own cache (conftest): built programs are reused
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    script = "set -e\n" + "\n".join(walkthrough()) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=850, check=False)  # fmt: skip
    assert done.returncode == 0, (done.stdout[-1500:], done.stderr[-3000:])
    assert (tmp_path / "first.html").is_file() and (tmp_path / "cl" / "platform.xml").is_file()
    assert "# commtune study first" in done.stdout, done.stdout[-800:]  # export's header
    assert "the simulated twin" in done.stdout + done.stderr
