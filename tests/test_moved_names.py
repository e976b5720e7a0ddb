"""Import paths scripts used before the layered layout keep working (``codeward.kernel.moved_names``):
the same module objects under their old names, a DeprecationWarning naming the new path, and nothing
aliased that was not meant to be."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from codeward.kernel.moved_names import MOVED, new_name

# codemod: keep (this file names the old paths on purpose; the layout's codemod leaves them)
SCRIPT = textwrap.dedent("""
    import warnings
    warnings.simplefilter("error", DeprecationWarning)
    try:
        from codeward.control import ApiHookClient
    except DeprecationWarning as warned:
        print("WARNED", warned)
    warnings.simplefilter("ignore", DeprecationWarning)
    from codeward.control import ApiHookClient                    # docs/control.md, before the layout
    from codeward.context import ToolContext                      # docs/gateway.md
    from codeward.workspace import Workspace
    from codeward.gateway import Gateway, load_gateway_config     # never moved
    from codeward.coding.sandbox import SandboxRequest            # docs/sandbox.md
    from codeward.coding.sandbox.overlay import Overlays
    import codeward.apps.control, codeward.kernel.context, codeward.engines.sandbox.overlay
    assert ApiHookClient is codeward.apps.control.ApiHookClient
    assert ToolContext is codeward.kernel.context.ToolContext
    assert Overlays is codeward.engines.sandbox.overlay.Overlays
    assert codeward.kernel.context.__spec__.name == "codeward.kernel.context"  # the module keeps its own name
    ctx = ToolContext(Workspace.create(["."]))
    assert isinstance(ctx, codeward.kernel.context.ToolContext)
    try:
        import codeward.state_dir  # moved with no alias: its new home is in docs/architecture.md
    except ModuleNotFoundError:
        print("NOT ALIASED")
    print("OK")
""")


def test_the_documented_old_paths_still_import_the_same_modules() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("WARNED codeward.control moved to codeward.apps.control; import it from there "
                        "(the old name is kept working)"), lines
    assert lines[1:] == ["NOT ALIASED", "OK"], lines


def test_every_alias_names_a_module_that_exists() -> None:
    import importlib.util

    assert all(importlib.util.find_spec(new) is not None for new in MOVED.values())
    assert new_name("codeward.control.client") == "codeward.apps.control.client"
    assert new_name("codeward.coding.sandbox.overlay") == "codeward.engines.sandbox.overlay"
    assert new_name("codeward.codingx") is None and new_name("codeward.apps.control") is None
# codemod: end
