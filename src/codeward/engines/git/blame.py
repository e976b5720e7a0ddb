"""``git blame`` read as data: for each line of a range, the commit that last changed it.

The caller has already put the file through the gate (a blacklisted name never gets here);
the content blamed — the work tree's file or the file at a revision — is checked again here
for what no name reveals: a binary file is refused, and so is a private key's content.
``--line-porcelain`` repeats each commit's details on every line, so each line parses alone.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from codeward.engines.git.repository import Repository
from codeward.kernel.result import ErrorKind, Result
from codeward.kernel.workspace import private_key_marker

HEADER = re.compile(r"^(?P<hash>[0-9a-f]{40,64}) (?P<orig>\d+) (?P<final>\d+)(?: \d+)?$")
UNCOMMITTED = re.compile(r"^0+$")
MAX_LINE_CHARS = 500


@dataclass(frozen=True)
class BlameLine:
    line: int
    commit: str
    """The commit's short hash; "" for a line not committed yet."""
    author: str
    date: str
    """The author's date, YYYY-MM-DD."""
    summary: str
    text: str
    original_line: int
    original_path: str


def check_content(repository: Repository, revision: str, rel: str) -> Result[int]:
    """How many lines ``rel`` has at ``revision``: refused when it is not there, binary or a key."""
    ran = repository.run(["cat-file", "blob", f"{revision}:{rel}"])
    if not ran.ok:
        return ran.cast(0)
    if ran.data.returncode != 0:
        return Result.fail(ErrorKind.NOT_FOUND, f"{rel} does not exist at revision {revision!r}",
                           "List the files a commit changed with git_log(files=true), or blame another revision.",
                           data=0)
    return content_lines(ran.data.stdout, rel)


def content_lines(text: str, rel: str) -> Result[int]:
    """The number of lines of a file's text, or why it cannot be blamed."""
    if "\0" in text[:8192]:
        return Result.fail(ErrorKind.INVALID_INPUT, f"{rel} is a binary file; blame reads text files",
                           "Use git_log(path=...) to see the commits that changed it.", data=0)
    if marker := private_key_marker(text[:4096].encode("utf-8", "surrogateescape")):
        return Result.fail(ErrorKind.PERMISSION, f"{rel} holds a private key ({marker})",
                           "Keys are never readable by tools, whatever the file is called.", data=0)
    return Result.success(text.count("\n") + (0 if not text or text.endswith("\n") else 1))


def read_blame(repository: Repository, rel: str, revision: str, first: int, last: int) -> Result[list[BlameLine]]:
    """Lines ``first``..``last`` (1-based, inclusive) of ``rel`` at ``revision`` ("" for the work tree)."""
    args = ["blame", "--line-porcelain", "--no-progress", "--no-textconv", f"-L{first},{last}"]
    if revision:
        args.append(revision)
    args += ["--", rel]
    ran = repository.run(args)
    if not ran.ok:
        return ran.cast([])
    if ran.data.returncode != 0:
        error = ran.data.first_error_line()
        if "no such ref: HEAD" in error:
            return Result.fail(ErrorKind.NOT_FOUND, "the repository has no commits yet, so no line has a commit",
                               "Commit the file first (git_commit).", data=[])
        if "no such path" in error:
            return Result.fail(ErrorKind.NOT_FOUND, f"{rel} is not tracked by git"
                               + (f" at {revision!r}" if revision else ""),
                               "Blame works on committed files: git_status shows untracked ones.", data=[])
        return Result.fail(ErrorKind.INTERNAL, f"git blame failed: {error}", data=[])
    return Result.success(parse_blame(ran.data.stdout))


def parse_blame(output: str) -> list[BlameLine]:
    """``--line-porcelain`` output as lines."""
    found: list[BlameLine] = []
    details: dict[str, str] = {}
    header: re.Match[str] | None = None
    for line in output.split("\n"):
        if header is None:
            header = HEADER.match(line)
            details = {}
            continue
        if line.startswith("\t"):
            commit = header.group("hash")
            text = line[1:]
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + " [...]"
            pending = bool(UNCOMMITTED.match(commit))
            found.append(BlameLine(
                line=int(header.group("final")), commit="" if pending else commit[:12],
                author="(not committed yet)" if pending else details.get("author", ""),
                date=_date(details.get("author-time", "")), summary="" if pending else details.get("summary", ""),
                text=text, original_line=int(header.group("orig")), original_path=details.get("filename", "")))
            header = None
            continue
        key, _, value = line.partition(" ")
        details[key] = value
    return found


def _date(epoch: str) -> str:
    try:
        return time.strftime("%Y-%m-%d", time.gmtime(int(epoch)))
    except ValueError:
        return ""
