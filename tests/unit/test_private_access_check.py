"""``make lint`` refuses first-party code that reaches into other libraries' private names
(scripts/check_private_access.py): the speed-ups of issue 14 did, and every upgrade of those
libraries became an investigation."""

from __future__ import annotations

from pathlib import Path

from scripts import check_private_access


def _checked(tmp_path: Path, source: str) -> int:
    module = tmp_path / "module.py"
    module.write_text(source, encoding="utf-8")
    return check_private_access.main([str(module)])


def test_a_private_attribute_of_a_library_is_reported(tmp_path, capsys):
    assert _checked(tmp_path, "def f(connection):\n    return connection._sock\n") == 1
    assert "private attribute ._sock" in capsys.readouterr().out


def test_a_private_name_imported_from_a_library_is_reported(tmp_path, capsys):
    assert _checked(tmp_path, "from psycopg.cursor import _prepare_cursor\n") == 1
    assert "private name _prepare_cursor of psycopg.cursor" in capsys.readouterr().out


def test_our_own_underscored_names_and_djangos_documented_meta_pass(tmp_path):
    source = (
        "class Counter:\n"
        "    def __init__(self):\n"
        "        self._count = 0\n"
        "    def fields(self, model):\n"
        "        return self._count, model._meta.fields, model._default_manager\n"
    )

    assert _checked(tmp_path, source) == 0


def test_the_project_uses_no_private_name_of_another_library():
    assert check_private_access.main([]) == 0
