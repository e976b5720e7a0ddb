"""Diagnose a failed run from its error output, and repair it with a model in a loop.

:func:`diagnose` reads tracebacks and compiler messages of every supported language (the
error type, the line in the user's code, a root cause in plain words). :func:`repair` asks
the configured OpenAI-compatible model for a corrected program, runs it in the sandbox,
and feeds any new failure back, up to ``max_retries`` attempts. The model sees only the
code and its output; what it proposes is never trusted, only executed contained.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from codeward.engines.llm.client import ModelError

ROOT_CAUSES: dict[str, str] = {
    "ZeroDivisionError": "Division by zero not handled",
    "NameError": "A name is used that is not defined (a typo, or a missing import or assignment)",
    "TypeError": "A value of the wrong type was passed to an operation or function",
    "AttributeError": "An attribute or method was used that the object does not have",
    "IndexError": "A sequence index is out of range",
    "KeyError": "A dictionary key that is not present was looked up",
    "ValueError": "A function received a value of the right type but an invalid content",
    "ModuleNotFoundError": "A module is imported that is not installed in the sandbox",
    "ImportError": "An import failed",
    "RecursionError": "Recursion never reaches its base case (or is too deep)",
    "SyntaxError": "The code is not valid syntax",
    "IndentationError": "The indentation of a block is wrong",
    "FileNotFoundError": "A file is opened that does not exist in the sandbox",
    "UnboundLocalError": "A local variable is read before it is assigned",
    "MemoryError": "The program ran out of memory",
    "AssertionError": "An assertion does not hold",
    "ArithmeticException": "Division by zero (or another arithmetic error) not handled",
    "NullPointerException": "A null reference is dereferenced",
    "ArrayIndexOutOfBoundsException": "An array index is out of range",
    "ReferenceError": "A variable is used that is not declared",
    "CompileError": "The code does not compile",
    "Panic": "The program panicked at run time",
    "CommandNotFound": "A command that does not exist was run",
    "Timeout": "The program did not finish in time (an endless loop or too much work)",
}

_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.MULTILINE)
_PY_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)|[A-Z]\w*Error)(?::\s*(.*))?$",
                       re.MULTILINE)
_C_ERROR = re.compile(r"^[^:\n]*\.(?:c|cpp|cc|h|hpp):(\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(.*)$", re.MULTILINE)
_RUST_ERROR = re.compile(r"^error(?:\[(E\d+)\])?:\s*(.*)$(?:\n.*?-->\s*[^:\n]+:(\d+))?", re.MULTILINE)
_RUST_PANIC = re.compile(r"panicked at [^:\n]+:(\d+):\d+:\n(.*)", re.MULTILINE)
_JAVA_COMPILE = re.compile(r"^[^:\n]*\.java:(\d+):\s*error:\s*(.*)$", re.MULTILINE)
_JAVA_EXCEPTION = re.compile(r"Exception in thread \"[^\"]*\" ([\w.$]+)(?::\s*(.*))?")
_JAVA_FRAME = re.compile(r"at [\w.$<>]+\([\w$]+\.java:(\d+)\)")
_JS_ERROR = re.compile(r"^(\w*Error)(?::\s*(.*))?$", re.MULTILINE)
_JS_FRAME = re.compile(r"main\.js:(\d+)")
_GO_ERROR = re.compile(r"^[^:\n]*\.go:(\d+):\d+:\s*(.*)$", re.MULTILINE)
_GO_PANIC = re.compile(r"^panic:\s*(.*)$", re.MULTILINE)
_GO_FRAME = re.compile(r"main\.go:(\d+)")
_BASH_ERROR = re.compile(r"line (\d+):\s*(.*)$", re.MULTILINE)
_USER_FILES = ("<string>", "main.py", "<cell", "<stdin>", "/code/")


@dataclass
class Diagnosis:
    error_type: str
    line_number: int | None
    root_cause: str
    message: str = ""
    language: str = "python"


def detect_language(code: str, stderr: str = "") -> str:
    """A best guess when the caller did not say which language the code is in."""
    by_file = re.search(r"\bmain\.(py|js|sh|c|cpp|go|rs)\b", stderr)
    if by_file:
        return {"py": "python", "js": "javascript", "sh": "bash", "c": "c", "cpp": "cpp", "go": "go",
                "rs": "rust"}[by_file.group(1)]
    checks: list[tuple[str, Callable[[], bool]]] = [
        ("python", lambda: "Traceback (most recent call last)" in stderr),
        ("java", lambda: "public static void main" in code or ".java:" in stderr),
        ("rust", lambda: "fn main" in code),
        ("go", lambda: re.search(r"^package\s+main", code, re.MULTILINE) is not None),
        ("cpp", lambda: "#include" in code and ("iostream" in code or "std::" in code)),
        ("c", lambda: "#include" in code),
        ("javascript", lambda: "console.log" in code or "require(" in code or "=>" in code),
        ("bash", lambda: (code.startswith("#!") and "sh" in code.splitlines()[0]) or "echo " in code),
    ]
    for name, check in checks:
        if check():
            return name
    return "python"


def diagnose(language: str, stderr: str, stdout: str = "", exit_code: int | None = None) -> Diagnosis:
    """Classify a failure from its output; unknown shapes still give a usable diagnosis."""
    text = stderr or stdout
    parsers: dict[str, Callable[[str], Diagnosis | None]] = {
        "python": _python, "c": _c, "cpp": _c, "rust": _rust, "java": _java, "javascript": _javascript,
        "go": _go, "bash": _bash,
    }
    parser = parsers.get(language, _python)
    found = parser(text) if text.strip() else None
    if found is None:
        kind = "Timeout" if exit_code is None else ("NonZeroExit" if exit_code else "NoError")
        message = text.strip().splitlines()[-1] if text.strip() else ""
        cause = ROOT_CAUSES.get(kind) or (
            f"The program exited with status {exit_code} without a recognizable error message"
            if exit_code else "No error was reported")
        found = Diagnosis(kind, None, cause, message)
    found.language = language
    return found


def _cause(kind: str, message: str) -> str:
    short = kind.rsplit(".", 1)[-1]
    base = ROOT_CAUSES.get(short)
    if base and message:
        return f"{base}: {message}"
    return base or message or short


def _python(text: str) -> Diagnosis | None:
    errors = list(_PY_ERROR.finditer(text))
    if not errors:
        return None
    last = errors[-1]
    kind, message = last.group(1), (last.group(2) or "").strip()
    line: int | None = None
    for frame in _PY_FRAME.finditer(text):
        if any(marker in frame.group(1) for marker in _USER_FILES) or line is None:
            line = int(frame.group(2))
    return Diagnosis(kind.rsplit(".", 1)[-1], line, _cause(kind, message), message)


def _c(text: str) -> Diagnosis | None:
    found = _C_ERROR.search(text)
    if found:
        return Diagnosis("CompileError", int(found.group(1)), _cause("CompileError", found.group(2)), found.group(2))
    return None


def _rust(text: str) -> Diagnosis | None:
    panic = _RUST_PANIC.search(text)
    if panic:
        return Diagnosis("Panic", int(panic.group(1)), _cause("Panic", panic.group(2).strip()), panic.group(2).strip())
    found = _RUST_ERROR.search(text)
    if found:
        line = int(found.group(3)) if found.group(3) else None
        return Diagnosis(found.group(1) or "CompileError", line, _cause("CompileError", found.group(2)),
                         found.group(2))
    return None


def _java(text: str) -> Diagnosis | None:
    compiled = _JAVA_COMPILE.search(text)
    if compiled:
        return Diagnosis("CompileError", int(compiled.group(1)), _cause("CompileError", compiled.group(2)),
                         compiled.group(2))
    thrown = _JAVA_EXCEPTION.search(text)
    if thrown:
        frame = _JAVA_FRAME.search(text, thrown.end())
        message = (thrown.group(2) or "").strip()
        kind = thrown.group(1).rsplit(".", 1)[-1]
        return Diagnosis(kind, int(frame.group(1)) if frame else None, _cause(kind, message), message)
    return None


def _javascript(text: str) -> Diagnosis | None:
    errors = list(_JS_ERROR.finditer(text))
    if not errors:
        return None
    kind, message = errors[0].group(1), (errors[0].group(2) or "").strip()
    frame = _JS_FRAME.search(text)
    return Diagnosis(kind, int(frame.group(1)) if frame else None, _cause(kind, message), message)


def _go(text: str) -> Diagnosis | None:
    panic = _GO_PANIC.search(text)
    if panic:
        frame = _GO_FRAME.search(text, panic.end())
        return Diagnosis("Panic", int(frame.group(1)) if frame else None, _cause("Panic", panic.group(1)),
                         panic.group(1))
    found = _GO_ERROR.search(text)
    if found:
        return Diagnosis("CompileError", int(found.group(1)), _cause("CompileError", found.group(2)), found.group(2))
    return None


def _bash(text: str) -> Diagnosis | None:
    found = _BASH_ERROR.search(text)
    if not found:
        return None
    message = found.group(2).strip()
    kind = "CommandNotFound" if "command not found" in message else "ShellError"
    return Diagnosis(kind, int(found.group(1)), _cause(kind, message), message)


# -- the repair loop ---------------------------------------------------------------------

SYSTEM_PROMPT = (
    "You fix failing programs. Reply with a one-line description of the fix starting with 'Fix:', "
    "then the complete corrected program in a single fenced code block. Keep the program's purpose; "
    "change only what is needed for it to run without errors."
)
_FENCE = re.compile(r"```[\w+#.-]*[ \t]*\n(.*?)```", re.DOTALL)
_FIX_LINE = re.compile(r"^\s*(?:\*\*)?Fix(?:\*\*)?:\s*(.+)$", re.MULTILINE | re.IGNORECASE)


@dataclass
class Attempt:
    code: str
    description: str
    status: str
    stdout: str
    stderr: str
    exit_code: int | None


@dataclass
class Repair:
    fixed_code: str | None
    description: str
    attempts: list[Attempt] = field(default_factory=list)
    error: str | None = None

    @property
    def success(self) -> bool:
        return self.fixed_code is not None


def build_prompt(language: str, code: str, stderr: str, stdout: str, diagnosis: Diagnosis,
                 previous: list[Attempt]) -> list[dict[str, str]]:
    where = f" at line {diagnosis.line_number}" if diagnosis.line_number else ""
    user = (f"This {language} program fails with {diagnosis.error_type}{where}: {diagnosis.root_cause}.\n\n"
            f"```{language}\n{code}\n```\n\nstderr:\n```\n{stderr[-4000:]}\n```\n")
    if stdout.strip():
        user += f"\nstdout:\n```\n{stdout[-2000:]}\n```\n"
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    for attempt in previous:
        messages.append({"role": "assistant", "content": f"Fix: {attempt.description}\n```{language}\n"
                                                         f"{attempt.code}\n```"})
        messages.append({"role": "user", "content": f"That still fails ({attempt.status}, exit code "
                                                    f"{attempt.exit_code}).\nstderr:\n```\n{attempt.stderr[-4000:]}"
                                                    "\n```\nSend a corrected complete program."})
    return messages


def parse_reply(reply: str) -> tuple[str | None, str]:
    """The code block and the fix description of a model reply (code ``None`` when absent)."""
    blocks = _FENCE.findall(reply)
    code = max(blocks, key=len).rstrip("\n") + "\n" if blocks else None
    described = _FIX_LINE.search(reply)
    if described:
        description = described.group(1).strip()
    else:
        outside = _FENCE.sub("", reply).strip()
        description = outside.splitlines()[0].strip() if outside else "The model proposed a corrected program"
    return code, description


Ask = Callable[[list[dict[str, str]]], str]
Verify = Callable[[str], Attempt]


def repair(ask: Ask, verify: Verify, language: str, code: str, stderr: str, stdout: str, diagnosis: Diagnosis,
           max_retries: int, on_attempt: Callable[[int, Attempt], None] | None = None) -> Repair:
    """Ask for a fix, run it, repeat with the new failure until one runs cleanly."""
    attempts: list[Attempt] = []
    for number in range(1, max_retries + 1):
        try:
            reply = ask(build_prompt(language, code, stderr, stdout, diagnosis, attempts))
        except ModelError as exc:
            return Repair(None, "", attempts, str(exc))
        candidate, description = parse_reply(reply)
        if candidate is None:
            attempt = Attempt("", description, "no_code", "", "the reply held no code block", None)
        else:
            attempt = verify(candidate)
            attempt.description = description
        attempts.append(attempt)
        if on_attempt is not None:
            on_attempt(number, attempt)
        if attempt.status == "success":
            return Repair(attempt.code, description, attempts)
    return Repair(None, attempts[-1].description if attempts else "", attempts,
                  f"none of the {len(attempts)} proposed fix(es) ran cleanly")
