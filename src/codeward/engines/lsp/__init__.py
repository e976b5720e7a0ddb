"""Language servers behind the navigation tools: references, renames, definitions, diagnostics.

basedpyright, typescript-language-server, gopls and clangd run in the project's box (:mod:`.box`,
through :meth:`codeward.engines.contained.project_sandbox.ProjectSandbox.start`), started on first
use and kept (:mod:`.pool`), spoken to over JSON-RPC (:mod:`.client`); :mod:`.answers` and
:mod:`.python_answers` turn their answers into the tools' reports, the symbol index answering
(marked name-based) while a server starts or where none is installed.
"""
