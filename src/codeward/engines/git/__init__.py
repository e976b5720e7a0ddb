"""Git as codeward reads it: never running what a repository configures, never leaving the roots,
never showing a protected file.

* :func:`run_git` (``runner``): one hardened git process (no system/global config, every
  program-running setting overridden, a timeout, the whole group killed).
* :class:`Repository` (``repository``): a repository verified to lie inside the workspace,
  with git pinned to it, its driver commands emptied, and blacklisted paths excluded from
  every pathspec (:meth:`Repository.pathspec`) and withheld from diffs.

Tools build on :class:`Repository`: ``discover`` it from a resolved path, then ``run`` git
with ``pathspec(path)`` at the end of the arguments, and ``tree`` to accept a revision.
"""

from codeward.engines.git.repository import EMPTY_TREE, Repository
from codeward.engines.git.runner import GitOutput, check_revision, run_git

__all__ = ["EMPTY_TREE", "GitOutput", "Repository", "check_revision", "run_git"]
