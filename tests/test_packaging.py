"""The package's own metadata: what `pip install` reads on a newcomer's first screen."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"


def test_the_license_is_an_spdx_expression() -> None:
    """A TOML table for `project.license` made setuptools print a deprecation box four times
    during `make demo`; an SPDX string needs setuptools 77 or later to build."""
    data = tomllib.loads(PYPROJECT.read_text())
    assert data["project"]["license"] == "BSD-3-Clause"
    (requirement,) = data["build-system"]["requires"]
    assert requirement.replace(" ", "") == "setuptools>=77"
