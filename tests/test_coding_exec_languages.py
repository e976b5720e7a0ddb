"""Every language: hello world reading stdin, and broken code reported as an error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from codeward.engines.execution.runtime import CodingRuntime
from codeward.kernel.catalog import Catalog
from codeward.kernel.outcome import ToolOutcome
from tests.sandbox_support import caller, context, runtime_fixture

pytestmark = pytest.mark.xdist_group("coding-languages")

runtime = pytest.fixture(scope="module")(runtime_fixture())

HELLO = {
    "python": "import sys\nname = sys.stdin.readline().strip()\nprint(f'hello, {name}')\n",
    "javascript": "const name = require('fs').readFileSync(0, 'utf8').trim();\nconsole.log(`hello, ${name}`);\n",
    "bash": 'read -r name\necho "hello, $name"\n',
    "c": r"""
#include <stdio.h>
int main(void) {
  char name[64];
  if (scanf("%63s", name) != 1) return 2;
  printf("hello, %s\n", name);
  return 0;
}
""",
    "cpp": r"""
#include <iostream>
#include <string>
int main() {
  std::string name;
  std::getline(std::cin, name);
  std::cout << "hello, " << name << std::endl;
}
""",
    "go": r"""
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

func main() {
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Printf("hello, %s\n", strings.TrimSpace(line))
}
""",
    "rust": r"""
use std::io::BufRead;
fn main() {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    println!("hello, {}", line.trim());
}
""",
    "java": r"""
import java.util.Scanner;

public class Greeter {
    public static void main(String[] args) {
        String name = new Scanner(System.in).nextLine();
        System.out.println("hello, " + name);
    }
}
""",
}

BROKEN = {
    "python": ("print('unclosed'\n", "SyntaxError"),
    "javascript": ("console.log('unclosed';\n", "SyntaxError"),
    "bash": ("if then fi (\n", "syntax error"),
    "c": ("int main(void) { return undefined_name; }\n", "undefined_name"),
    "cpp": ("int main() { std::cout << missing; }\n", "error"),
    "go": ("package main\n\nfunc main() {\n\tundefinedCall()\n}\n", "undefined"),
    "rust": ("fn main() {\n    let x: i32 = \"text\";\n}\n", "mismatched types"),
    "java": ("public class Broken {\n    public static void main(String[] a) { int x = \"s\"; }\n}\n",
             "incompatible types"),
}
COMPILED = {"c", "cpp", "go", "rust", "java"}


@pytest.fixture
def run(catalog: Catalog, root: Path, runtime: CodingRuntime) -> Callable[..., ToolOutcome]:
    return caller(catalog, context(root, runtime))


def require(runtime: CodingRuntime, language: str) -> None:
    chain = runtime.toolchains()[language]
    if not chain.available:
        pytest.skip(f"{language} is not installed here: {chain.reason}")


@pytest.mark.parametrize("language", list(HELLO))
def test_hello_world_reads_stdin(run: Callable[..., ToolOutcome], runtime: CodingRuntime, language: str) -> None:
    require(runtime, language)
    outcome = run("coding_execute_code", language=language, code=HELLO[language], stdin="world\n")
    assert not outcome.is_error, outcome.text
    result = outcome.structured
    assert result is not None
    assert result["status"] == "success", outcome.text
    assert result["stdout"] == "hello, world\n"
    assert result["exit_code"] == 0
    assert result["error_message"] is None
    assert result["backend"] in ("bwrap", "process", "docker")
    assert (result["compile_time"] is not None) is (language in COMPILED)


@pytest.mark.parametrize("language", list(BROKEN))
def test_broken_code_is_reported_as_an_error(
    run: Callable[..., ToolOutcome], runtime: CodingRuntime, language: str
) -> None:
    require(runtime, language)
    code, expected = BROKEN[language]
    outcome = run("coding_execute_code", language=language, code=code)
    assert not outcome.is_error, outcome.text
    result = outcome.structured
    assert result is not None
    assert result["status"] == "error", outcome.text
    assert expected in result["stderr"]
    assert result["error_message"]
    if language in COMPILED:
        assert "compilation failed" in result["error_message"]
        assert any("not run because it did not compile" in note for note in result["notes"])
    else:
        assert "exited with status" in result["error_message"]


def test_runtime_error_in_a_compiled_program_is_an_error(
    run: Callable[..., ToolOutcome], runtime: CodingRuntime
) -> None:
    require(runtime, "c")
    code = "#include <stdio.h>\nint main(void) { int *p = 0; printf(\"before\\n\"); fflush(stdout); return *p; }\n"
    result = run("coding_execute_code", language="c", code=code).structured
    assert result is not None
    assert result["status"] == "error"
    assert result["stdout"] == "before\n"
    assert result["exit_code"] == -11
    assert "SIGSEGV" in result["error_message"]

