"""``codeward registry ...`` and ``codeward sign``: the same operations as the meta-tools, from a shell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codeward.apps.cli import main
from tests.conftest import snapshot
from tests.registry_support import python_tool, user_space, without_state, write

__all__ = ["user_space"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_registry_commands_from_new_to_run(root: Path, user_space: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = ("--root", str(root))
    code, out, _ = run(capsys, "registry", "new", "sizes", "--description", "Sum some sizes.", *r)
    assert code == 0 and "Created .ai/tools/utility/sizes.py" in out and "codeward sign sizes" in out
    path = root / ".ai/tools/utility/sizes.py"
    schema = json.dumps({"type": "object", "properties": {"sizes": {"type": "array", "items": {"type": "integer"}},
                                                          "unit": {"type": "string"}}})
    path.write_text(python_tool(body="    return {'total': sum(sizes), 'unit': unit}", params="sizes, unit='B'",
                                description="Sum some sizes.", schema=schema))
    code, _, err = run(capsys, "registry", "run", "sizes", "sizes=[1,2]", *r)
    assert code == 1 and "sizes is not signed" in err

    completed = subprocess.run([sys.executable, "-m", "codeward", "sign", "sizes", "--root", str(root)],
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0 and "Signed .ai/tools/utility/sizes.py" in completed.stdout

    code, out, _ = run(capsys, "registry", "run", "sizes", "sizes=[1,2,3]", "unit=kB", *r)
    assert code == 0 and json.loads(out.split("\n[sizes ran")[0]) == {"total": 6, "unit": "kB"}
    code, out, _ = run(capsys, "registry", "run", "sizes", "--params", '{"sizes": [4]}', *r)
    assert code == 0 and '"total": 4' in out
    code, out, _ = run(capsys, "registry", "run", "sizes", "--dry-run", *r)
    assert code == 0 and "dry run of sizes" in out
    signed = path.read_bytes()
    path.write_text(path.read_text().replace("sum(sizes)", "sum(sizes) * 2"))  # tampered after signing
    code, out, err = run(capsys, "registry", "run", "sizes", "sizes=[1,2]", *r)
    assert code == 1 and out == "" and "sizes does not match the signature" in err
    assert "changed since then: utility/sizes.py" in err and "codeward sign sizes" in err
    path.write_bytes(signed)
    code, out, _ = run(capsys, "registry", "search", "sum", "sizes", *r)
    assert code == 0 and "- sizes [tool, project, utility, v1.0.0, signed] Sum some sizes." in out
    code, out, _ = run(capsys, "registry", "search", "read", "file", "--source", "served", "--limit", "3", *r)
    assert code == 0 and "read_file [tool, codeward, files]" in out
    code, out, _ = run(capsys, "registry", "help", "sizes", *r)
    assert code == 0 and "runs via sizes → python_runtime → subprocess" in out
    code, out, _ = run(capsys, "registry", "help", *r)
    assert code == 0 and "Served tools" in out and "sizes [tool, project]" in out
    code, out, _ = run(capsys, "registry", "load", "sizes", "--to", "user", *r)
    assert code == 0 and "Copied to" in out and (user_space / "tools/utility/sizes.py").is_file()
    code, out, _ = run(capsys, "registry", "sign", "sizes", "--source", "user", *r)
    assert code == 0 and "Signed" in out


def test_cli_mistakes_are_one_clear_line(root: Path, user_space: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(root, ".ai/tools/greet.py", python_tool())
    before = snapshot(root)
    code, _, err = run(capsys, "registry", "run", "greet", "--params", "{not json", "--root", str(root))
    assert code == 2 and "--params is not JSON" in err
    code, _, err = run(capsys, "registry", "run", "greet", "name", "--root", str(root))
    assert code == 2 and "is not key=value" in err
    code, _, err = run(capsys, "sign", "nothing_here", "--root", str(root))
    assert code == 1 and "no item named 'nothing_here'" in err
    code, _, err = run(capsys, "registry", "search", "x", "--root", str(root / "missing"))
    assert code == 2 and "is not a directory" in err
    assert without_state(snapshot(root)) == without_state(before)
