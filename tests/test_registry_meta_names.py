"""A registry tool may not take the name of the registry's own tools, nor the seed's (Kiwi's) names for them
(``search``, ``load``, ``execute``, ``help``): creating one is refused, and a file of that name is an item with
a problem that says so — never a tool silently hidden by the registry's, nor one hiding it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeward.apps.cli import main
from codeward.engines.registry.meta_names import META_TOOLS
from codeward.tools import default_catalog

TOOL = '"""Search my notes."""\n__version__ = "1.0.0"\n__tool_type__ = "python"\n__category__ = "notes"\n' \
       '__executor_id__ = "python_runtime"\n\n\ndef main(**params):\n    return "my own search ran"\n'


def test_the_reserved_names_are_the_registry_tools_and_their_aliases() -> None:
    catalog = default_catalog()
    for tool, alias in META_TOOLS.items():
        spec = catalog.get(tool)
        assert spec is not None and spec.aliases == (alias,), tool


@pytest.mark.parametrize("name", ["search", "load", "execute", "help", "registry_search"])
def test_creating_a_tool_named_like_the_registry_s_own_is_refused(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEWARD_HOME", str(tmp_path / "home"))
    assert main(["registry", "new", name]) == 1
    err = capsys.readouterr().err
    assert f"cannot create {name!r}: {name!r} is the registry's own" in err and "which a tool of that name would " \
        "clash with" in err
    assert f"Choose another name (e.g. my_{name}.py)" in err
    assert not (tmp_path / ".ai").exists()


def test_a_tool_file_with_such_a_name_is_named_as_the_problem_and_not_hidden(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".ai" / "tools").mkdir(parents=True)
    (tmp_path / ".ai" / "tools" / "search.py").write_text(TOOL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEWARD_HOME", str(tmp_path / "home"))
    assert main(["registry", "run", "search"]) == 1  # not the registry's search run in its place
    out, err = capsys.readouterr()
    assert "'search' is the registry's own" in err and "rename the file (e.g. my_search.py)" in err
    assert "result(s) for" not in out + err and "my own search ran" not in out
    assert main(["registry", "search", "notes"]) == 0
    listed = capsys.readouterr().out
    assert re.search(r"^- search \[tool, project, .*invalid\] Search my notes\.$", listed, re.M), listed
