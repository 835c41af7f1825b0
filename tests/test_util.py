"""Shared helpers: sizes as text, whole-or-nothing writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from commtune.cli._common import size
from commtune.errors import UsageError
from commtune.util import atomic_path, format_size, parse_size, write_atomic


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4096", 4096), ("0x10", 16), ("64k", 65536), ("64K", 65536), ("64KiB", 65536),
        ("64kb", 65536), ("1M", 1 << 20), ("1MiB", 1 << 20), ("1GiB", 1 << 30), ("2g", 2 << 30),
        ("1.5M", 3 << 19), ("8B", 8),
    ],
)  # fmt: skip
def test_parse_size(text: str, value: int) -> None:
    assert parse_size(text) == value
    assert size(text) == value  # the command line's size arguments (--predict, --size)


@pytest.mark.parametrize("text", ["", "k", "abc", "-1", "1.3", "12Q"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_format_size() -> None:
    assert [format_size(s) for s in (None, 8, 1536, 1 << 20)] == ["∞", "8 B", "1.5 KiB", "1 MiB"]
    assert format_size(3 << 30) == "3 GiB"  # profiles' byte totals


def test_atomic_writes_are_whole_and_private(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"
    write_atomic(target, "old")
    with atomic_path(target) as one, atomic_path(target) as two:
        assert one != two and one.parent == two.parent == tmp_path  # never a shared temp file
        one.write_text("first")
        two.write_text("second")
    assert target.read_text() == "first"  # the outer writer finished last
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "first" and list(tmp_path.iterdir()) == [target]
    with pytest.raises(UsageError, match="does not exist"):
        write_atomic(tmp_path / "missing" / "x", "text")


def test_an_atomic_write_keeps_a_device_and_the_files_mode(tmp_path: Path) -> None:
    import os
    import stat

    write_atomic(os.devnull, "discarded\n")  # written into, never replaced by a file
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    target = tmp_path / "out.env"
    target.write_text("old\n")
    target.chmod(0o640)
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o640
    fresh = tmp_path / "fresh.html"
    write_atomic(fresh, "x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~mask  # as a plain open() would
    program = tmp_path / "prog"
    with atomic_path(program, mode=0o777) as tmp:
        tmp.write_text("#!/bin/sh\n")
    assert stat.S_IMODE(program.stat().st_mode) == 0o777 & ~mask and os.access(program, os.X_OK)


def test_a_study_is_named_after_the_program_not_its_input_or_output(tmp_path: Path) -> None:
    """SNAP's command ends with its input file and ``/dev/stdout``: the study's automatic
    name is the executable's; with no executable file named, the last path, else the first
    word."""
    from commtune.knobs import Space
    from commtune.service import default_study_name

    program, given = tmp_path / "gsnap", tmp_path / "snap.inp"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    given.write_text("")
    space = Space("openmpi", ())
    argv = ["mpirun", "-n", "2", str(program), str(given), "/dev/stdout"]
    assert default_study_name(argv, "openmpi", space).startswith("gsnap-openmpi-")
    missing = ["mpirun", "-n", "2", "/nowhere/app", "42"]
    assert default_study_name(missing, "mpich", space).startswith("app-mpich-")
    assert default_study_name(["true"], "mpich", space).startswith("true-mpich-")
