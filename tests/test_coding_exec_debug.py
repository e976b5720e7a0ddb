"""coding_debug_code: diagnosis of real failures, and the repair loop against a real local
OpenAI-protocol server that streams scripted replies."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.config import CodingSettings
from codeward.engines.execution.runtime import CodingRuntime
from codeward.kernel.catalog import Catalog
from codeward.kernel.outcome import ToolOutcome
from tests.fake_openai import FakeOpenAI, text
from tests.sandbox_support import caller, context, runtime_fixture

pytestmark = pytest.mark.xdist_group("coding-debug")

runtime = pytest.fixture(scope="module")(runtime_fixture())

FAILING = "def average(items):\n    total = sum(items)\n    return total / len(items)\n\nprint(average([]))\n"
NO_MODEL = CodingSettings(model=None)


def debug_caller(catalog: Catalog, root: Path, runtime: CodingRuntime,
                 settings: CodingSettings) -> Callable[..., ToolOutcome]:
    return caller(catalog, context(root, runtime, settings))


def failed_run(catalog: Catalog, root: Path, runtime: CodingRuntime, language: str, code: str) -> dict[str, object]:
    outcome = caller(catalog, context(root, runtime))("coding_execute_code", language=language, code=code)
    assert outcome.structured is not None and outcome.structured["status"] == "error", outcome.text
    return outcome.structured


def test_without_a_model_the_diagnosis_comes_back_and_says_so(
    catalog: Catalog, root: Path, runtime: CodingRuntime
) -> None:
    failed = failed_run(catalog, root, runtime, "python", FAILING)
    run = debug_caller(catalog, root, runtime, NO_MODEL)
    outcome = run("coding_debug_code", source_code=FAILING, stdout=failed["stdout"], stderr=failed["stderr"],
                  exit_code=failed["exit_code"])
    assert not outcome.is_error
    result = outcome.structured
    assert result is not None
    assert result["success"] is False and result["fixed_code"] is None
    assert "no model is configured" in result["error"]
    assert result["diagnosis"] == {"error_type": "ZeroDivisionError", "line_number": 3,
                                   "root_cause": "Division by zero not handled: division by zero",
                                   "message": "division by zero", "language": "python"}
    assert result["patches_attempted"] == 0


@pytest.mark.parametrize(
    ("language", "code", "error_type", "line"),
    [
        ("c", "int main(void) {\n  return missing;\n}\n", "CompileError", 2),
        ("java", "public class Main {\n  public static void main(String[] a) {\n    int z = 0;\n"
                 "    System.out.println(1 / z);\n  }\n}\n", "ArithmeticException", 4),
        ("javascript", "const o = undefined;\n\nconsole.log(o.field);\n", "TypeError", 3),
        ("go", "package main\n\nfunc main() {\n\tvar m map[string]int\n\tm[\"k\"] = 1\n}\n", "Panic", 5),
        ("rust", "fn main() {\n    let v: Vec<i32> = Vec::new();\n    println!(\"{}\", v[3]);\n}\n", "Panic", 3),
        ("bash", "echo start\nnot_a_command_xyz\nexit 1\n", "CommandNotFound", 2),
    ],
)
def test_diagnoses_real_failures_of_each_language(
    catalog: Catalog, root: Path, runtime: CodingRuntime, language: str, code: str, error_type: str, line: int
) -> None:
    if not runtime.toolchains()[language].available:
        pytest.skip(f"{language} is not installed here")
    failed = failed_run(catalog, root, runtime, language, code)
    run = debug_caller(catalog, root, runtime, NO_MODEL)
    result = run("coding_debug_code", source_code=code, stdout=failed["stdout"], stderr=failed["stderr"],
                 exit_code=failed["exit_code"] if failed["exit_code"] is not None else 1).structured
    assert result is not None
    assert result["diagnosis"]["language"] == language  # detected from the code
    assert result["diagnosis"]["error_type"] == error_type
    assert result["diagnosis"]["line_number"] == line


def test_repairs_with_the_model_and_verifies_in_the_sandbox(
    catalog: Catalog, root: Path, runtime: CodingRuntime
) -> None:
    still_broken = "Fix: use the length\n```python\nprint(sum([]) / len([]))\n```\n"
    fixed = ("Fix: Added a guard for an empty list\n```python\ndef average(items):\n    if not items:\n"
             "        return 0.0\n    return sum(items) / len(items)\n\nprint(average([]))\n```\n")
    with FakeOpenAI([text(still_broken), text(fixed)]) as fake:
        settings = CodingSettings(model="fake-coder", model_base_url=fake.base_url, model_api_key="k")
        run = debug_caller(catalog, root, runtime, settings)
        outcome = run("coding_debug_code", source_code=FAILING, stdout="",
                      stderr="Traceback (most recent call last):\n  File \"/code/main.py\", line 3, in average\n"
                             "ZeroDivisionError: division by zero\n", exit_code=1, language="python")
    result = outcome.structured
    assert result is not None, outcome.text
    assert result["success"] is True
    assert result["patches_attempted"] == 2
    assert result["patch_description"] == "Added a guard for an empty list"
    assert result["verification"]["tests_passed"] is True
    assert result["verification"]["stdout"] == "0.0\n"
    assert "if not items" in result["fixed_code"]
    assert [a["status"] for a in result["attempts"]] == ["error", "success"]
    assert fake.requests[0]["model"] == "fake-coder" and fake.requests[0]["stream"] is True
    first_prompt = fake.requests[0]["messages"][1]["content"]
    assert "ZeroDivisionError at line 3" in first_prompt and FAILING.strip() in first_prompt
    retry = fake.requests[1]["messages"][-1]["content"]
    assert "still fails" in retry and "ZeroDivisionError" in retry


def test_gives_up_after_max_retries(catalog: Catalog, root: Path, runtime: CodingRuntime) -> None:
    wrong = "Fix: try again\n```python\nraise RuntimeError('nope')\n```\n"
    with FakeOpenAI([text(wrong), text("I am not sure what to do.")]) as fake:
        settings = CodingSettings(model="m", model_base_url=fake.base_url)
        run = debug_caller(catalog, root, runtime, settings)
        result = run("coding_debug_code", source_code=FAILING, stdout="", stderr="ZeroDivisionError: division by zero",
                     exit_code=1, max_retries=2).structured
    assert result is not None
    assert result["success"] is False and result["patches_attempted"] == 2
    assert [a["status"] for a in result["attempts"]] == ["error", "no_code"]
    assert "none of the 2 proposed fix(es) ran cleanly" in result["error"]
    assert len(fake.requests) == 2


def test_an_unreachable_model_is_reported_with_the_diagnosis(
    catalog: Catalog, root: Path, runtime: CodingRuntime
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = CodingSettings(model="m", model_base_url=f"http://127.0.0.1:{port}/v1", model_timeout_s=5)
    run = debug_caller(catalog, root, runtime, settings)
    result = run("coding_debug_code", source_code=FAILING, stdout="", stderr="ZeroDivisionError: division by zero",
                 exit_code=1).structured
    assert result is not None
    assert result["success"] is False
    assert "cannot reach the model server" in result["error"]
    assert result["diagnosis"]["error_type"] == "ZeroDivisionError"


def test_a_model_that_refuses_is_reported(catalog: Catalog, root: Path, runtime: CodingRuntime) -> None:
    from tests.fake_openai import Reply

    with FakeOpenAI([Reply(status=404, body='{"error": {"message": "model not found"}}')]) as fake:
        run = debug_caller(catalog, root, runtime, CodingSettings(model="absent", model_base_url=fake.base_url))
        result = run("coding_debug_code", source_code=FAILING, stdout="", stderr="ZeroDivisionError: x",
                     exit_code=1).structured
    assert result is not None
    assert "HTTP 404" in result["error"] and "model not found" in result["error"]


def test_empty_source_is_invalid(catalog: Catalog, root: Path, runtime: CodingRuntime) -> None:
    outcome = debug_caller(catalog, root, runtime, NO_MODEL)("coding_debug_code", source_code=" ", stdout="",
                                                             stderr="", exit_code=1)
    assert outcome.is_error and "source_code is empty" in outcome.text
