"""The one way codeward starts a program on project content: contained.

Every executor — ``run_shell``, ``run_tests``, the review's analyzers, Beads' ``bd``, registry
tools — opens a :class:`~codeward.engines.contained.project_sandbox.ProjectSandbox` and runs its
programs in it; ``tests/test_one_sandbox_entry.py`` fails for a module that starts one elsewhere.

- :mod:`.project_sandbox` — the box: the server's backend choice (or a refusal naming what to
  install), the roots read-only or through overlays, the limits, the cancelled call's kill.
- :mod:`.confine` — the project as the box shows it: the roots and tracked files as binds, the
  secrets the file tools refuse covered by empty stand-ins, a secret-holding history hidden.
- :mod:`.write_back` — a run's writes brought back through the workspace's write checks under the
  cross-process lock, recorded in the call's checkpoint; host-run paths held for a person.

It sits between the executors and the sandbox's backends (:mod:`codeward.engines.sandbox`) in the
engines' order.
"""
