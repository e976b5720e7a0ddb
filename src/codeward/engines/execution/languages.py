"""The languages codeward can run: how to compile and start each, and which toolchain it needs.

Inside the sandbox the source directory is ``/code`` (read-write while compiling, read-only
while running) and the program starts in a private, writable ``/work``. Memory limits are
per language because runtimes differ: node, Go and the JVM reserve large address spaces,
so limits are cgroup memory limits (resident memory), not RLIMIT_AS, and the JVM and node
are told their heap size explicitly (they cannot see the cgroup from inside).

:func:`detect_toolchains` finds what is installed here, once per runtime.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codeward.config.coding import CodingSettings
from codeward.engines.sandbox.model import Bind

CODE_DIR = "/code"
RUST_DIR = "/opt/rust"


@dataclass(frozen=True)
class Language:
    """A language's recipe; ``{main}`` is the class name (Java), ``{mem}`` the heap in MB."""

    name: str
    source: str
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    needs: tuple[str, ...] = ()
    """Host executables whose absence makes the language unavailable."""
    memory_mb: int = 256
    compile_memory_mb: int = 1024
    max_processes: int = 64
    compile_max_processes: int = 128
    env: Mapping[str, str] = field(default_factory=dict)
    install_hint: str = ""
    run_needs_toolchain: bool = True
    """False for native binaries: the run step then binds no toolchain directory."""
    docker_image: str = ""
    address_space_mb: int = 512
    """The least address space (RLIMIT_AS, used only where no memory cgroup exists) the runtime
    starts with; node, Go and the JVM reserve far more than they use."""

    @property
    def compiled(self) -> bool:
        return self.compile is not None


LANGUAGES: tuple[Language, ...] = (
    Language("python", "main.py", ("/usr/bin/python3", "-I", "-B", f"{CODE_DIR}/main.py"),
             needs=("/usr/bin/python3",), memory_mb=256, install_hint="apt-get install python3",
             docker_image="python:3.11-slim"),
    Language("javascript", "main.js", ("node", "--max-old-space-size={heap}", f"{CODE_DIR}/main.js"),
             needs=("node",), memory_mb=512, install_hint="apt-get install nodejs", docker_image="node:20-slim",
             address_space_mb=1536),
    Language("bash", "main.sh", ("bash", f"{CODE_DIR}/main.sh"), needs=("bash",), memory_mb=256,
             docker_image="bash:5.2"),
    Language("c", "main.c", (f"{CODE_DIR}/prog",),
             compile=("gcc", "-std=gnu17", "-O2", "-pipe", "-o", f"{CODE_DIR}/prog", f"{CODE_DIR}/main.c", "-lm"),
             needs=("gcc",), install_hint="apt-get install gcc", run_needs_toolchain=False, docker_image="gcc:12"),
    Language("cpp", "main.cpp", (f"{CODE_DIR}/prog",),
             compile=("g++", "-std=gnu++17", "-O2", "-pipe", "-o", f"{CODE_DIR}/prog", f"{CODE_DIR}/main.cpp"),
             needs=("g++",), install_hint="apt-get install g++", run_needs_toolchain=False, docker_image="gcc:12"),
    Language("go", "main.go", (f"{CODE_DIR}/prog",),
             compile=("go", "build", "-o", f"{CODE_DIR}/prog", f"{CODE_DIR}/main.go"),
             needs=("go",), compile_max_processes=256, max_processes=128,
             env={"GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go", "GO111MODULE": "off", "CGO_ENABLED": "0",
                  "GOMAXPROCS": "2"},
             install_hint="apt-get install golang-go", run_needs_toolchain=False, docker_image="golang:1.19",
             address_space_mb=1536),
    Language("rust", "main.rs", (f"{CODE_DIR}/prog",),
             compile=(f"{RUST_DIR}/bin/rustc", "--edition", "2021", "-C", "opt-level=1", "-C", "debuginfo=0",
                      "-o", f"{CODE_DIR}/prog", f"{CODE_DIR}/main.rs"),
             needs=("rustc", "cc"), install_hint="install Rust with rustup or apt-get install rustc",
             run_needs_toolchain=False, docker_image="rust:1-slim"),
    Language("java", "{main}.java",
             ("java", "-Xmx{heap}m", "-Xss8m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
              "-XX:-UsePerfData", "-cp", CODE_DIR, "{main}"),
             compile=("javac", "-J-Xmx384m", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData",
                      "-encoding", "UTF-8", "-d", CODE_DIR, f"{CODE_DIR}/{{main}}.java"),
             needs=("javac", "java"), memory_mb=512, max_processes=128,
             install_hint="apt-get install default-jdk-headless", docker_image="eclipse-temurin:17-jdk",
             address_space_mb=4096),
)
BY_NAME: Mapping[str, Language] = {language.name: language for language in LANGUAGES}


def docker_image(settings: CodingSettings, language: str) -> str:
    """The image ``language`` runs in under Docker: the configured one (``[coding] docker_images``), else
    the official one."""
    return settings.docker_images.get(language) or BY_NAME[language].docker_image

_JAVA_PUBLIC_CLASS = re.compile(r"^\s*public\s+(?:(?:final|abstract|sealed|strictfp)\s+)*class\s+([A-Za-z_$][\w$]*)",
                                re.MULTILINE)
_JAVA_ANY_CLASS = re.compile(r"^\s*(?:(?:final|abstract)\s+)*class\s+([A-Za-z_$][\w$]*)", re.MULTILINE)


def java_main_class(code: str) -> str:
    """The class javac must find in ``<Name>.java``: the public class, else the first one."""
    found = _JAVA_PUBLIC_CLASS.search(code) or _JAVA_ANY_CLASS.search(code)
    return found.group(1) if found else "Main"


@dataclass(frozen=True)
class Toolchain:
    """Whether a language can run here, and what the sandbox must bind for it."""

    language: Language
    available: bool
    reason: str = ""
    version: str = ""
    binds: tuple[Bind, ...] = ()
    """Extra read-only binds (toolchain directories outside ``/usr``, their config in /etc)."""


def detect_toolchains() -> dict[str, Toolchain]:
    """Every language with its availability and why not (runs a few ``--version`` commands)."""
    return {language.name: detect_toolchain(language) for language in LANGUAGES}


def detect_toolchain(language: Language) -> Toolchain:
    """One language's availability (see :func:`detect_toolchains`)."""
    missing = [tool for tool in language.needs if _which(tool) is None]
    if missing:
        hint = f"; {language.install_hint}" if language.install_hint else ""
        return Toolchain(language, False, f"{', '.join(missing)} not found on this machine{hint}")
    binds: list[Bind] = []
    if language.name == "rust":
        sysroot = _output([_which("rustc") or "rustc", "--print", "sysroot"])
        if not sysroot or not os.path.isfile(os.path.join(sysroot, "bin", "rustc")):
            return Toolchain(language, False, "rustc is installed but its toolchain directory was not found "
                                              "(`rustc --print sysroot` failed); run `rustup default stable`")
        binds.append(Bind(sysroot, RUST_DIR))
    for tool in language.needs:
        binds += _outside_usr(_which(tool) or tool)
    if language.name == "java":
        binds += [Bind(path) for path in sorted(glob.glob("/etc/java-*")) if os.path.isdir(path)]
    version_cmd = _version_command(language)
    version = _output(version_cmd).splitlines()[0] if version_cmd and _output(version_cmd) else ""
    return Toolchain(language, True, "", version, tuple(dict.fromkeys(binds)))


def _which(tool: str) -> str | None:
    if os.path.isabs(tool):
        return tool if os.access(tool, os.X_OK) else None
    return shutil.which(tool)


def _outside_usr(executable: str) -> list[Bind]:
    """Install prefixes to bind when a tool lives outside ``/usr`` (rustup proxies excepted)."""
    real = Path(executable).resolve()
    if str(real).startswith("/usr/") or real.name == "rustup":
        return []
    prefix = real.parent.parent if real.parent.name == "bin" else real.parent
    return [Bind(str(prefix))]


def _version_command(language: Language) -> list[str] | None:
    commands = {
        "python": ["/usr/bin/python3", "--version"], "javascript": ["node", "--version"],
        "bash": ["bash", "-c", "echo bash $BASH_VERSION"], "c": ["gcc", "--version"], "cpp": ["g++", "--version"],
        "go": ["go", "version"], "rust": [_which("rustc") or "rustc", "--version"], "java": ["javac", "-version"],
    }
    return commands.get(language.name)


def _output(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (done.stdout or done.stderr).strip()
