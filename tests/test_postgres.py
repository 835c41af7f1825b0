"""Studies in a real PostgreSQL server (started by the ``postgres`` fixture): tuning, resuming
and reading a study there as in SQLite, and a server that cannot be reached is one line."""

from __future__ import annotations

import pytest

from commtune.mpi import Vendor

from .conftest import demo_command, last_json, needs_mpich, run_cli


@needs_mpich
def test_a_study_lives_in_postgresql(postgres: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = demo_command(Vendor.MPICH, 100)
    args = ["tune", "--mpi", "mpich", "--knob", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
            "--strategy", "grid", "--trials", "3", "--repeats", "1", "--confirm", "0",
            "--study", "pg", "--storage", postgres, "--json", "--", *command]  # fmt: skip
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    assert last_json(out)["trials"] == 3
    # resumed with a larger budget: the finished trials are kept, one more runs
    more = [a if a != "3" else "4" for a in args]
    code, out, err = run_cli(more, capsys)
    assert code == 0, err
    assert last_json(out)["trials"] == 4
    code, out, _ = run_cli(["show", "pg", "--storage", postgres, "--json"], capsys)
    assert code == 0
    shown = last_json(out)
    assert [t["role"] for t in shown["trials"]][:1] == ["reference"]
    assert sum(t["role"] in ("reference", "search") for t in shown["trials"]) == 4
    code, out, _ = run_cli(["studies", "--storage", postgres, "--json"], capsys)
    assert code == 0 and "pg" in out


def test_an_unreachable_server_is_one_line(
    postgres: str, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres.replace("port=", "port=1").replace("/commtune?", "/nosuchdb?")
    code, out, err = run_cli(["studies", "--storage", url], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("commtune: error: cannot open storage postgresql+psycopg://")


def test_a_wrong_password_is_one_line_and_hidden(
    postgres: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres.replace("postgres@", "ctpassword:wrongsecret@")
    code, out, err = run_cli(["studies", "--storage", url], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "password authentication failed" in err
    assert "wrongsecret" not in err and "***" in err
