"""Checks of item metadata; each problem names the file, the field and the fix.

Signing refuses an item with problems, and so does running, so a tool that is broken in a
way the metadata shows never starts.
"""

from __future__ import annotations

import re
from typing import Any

from codeward.engines.registry.deps import check_dependencies
from codeward.engines.registry.items import NAME_PATTERN, Problem, ToolType
from codeward.engines.registry.meta_names import META_TOOL_NAMES, META_TOOLS
from codeward.engines.registry.metadata import ToolSource

SEMVER = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?"
HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){LABEL}(\.{LABEL})*$")
HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
FILE_TOOL_TYPES = (ToolType.PYTHON, ToolType.API, ToolType.MCP_TOOL, ToolType.RUNTIME)
TEMPLATE = '__version__ = "1.0.0"'


def check_name(name: str, file: str, reserved: frozenset[str] = frozenset()) -> list[Problem]:
    """``reserved``: the names a tool may not have (the built-in executors); a tool may not take the name of the
    registry's own tools either, by which it would be hidden or hide one of them."""
    if name in reserved:
        return [Problem(file, "name", f"{name!r} is the name of a built-in executor",
                        "rename the file; built-in primitives and runtimes cannot be replaced")]
    if reserved and name in META_TOOL_NAMES:
        own = next(tool for tool, alias in META_TOOLS.items() if name in (tool, alias))
        return [Problem(file, "name", f"{name!r} is the registry's own {own} (also called {META_TOOLS[own]!r}, "
                        "the seed's name), which a tool of that name would clash with",
                        f"rename the file (e.g. my_{name}.py); the registry's tools keep their names")]
    if NAME_PATTERN.match(name):
        return []
    return [Problem(file, "name", f"the file name gives the item name {name!r}, which is not allowed",
                    "rename the file to letters, digits, '_' and '-' only (at most 128)")]


def check_tool(source: ToolSource, file: str) -> tuple[list[Problem], dict[str, Any] | None]:
    """Problems of a tool's metadata, and its parameter schema when one is declared."""
    if source.syntax_error:
        return [Problem(file, "syntax", f"the file is not valid Python ({source.syntax_error})",
                        "fix the syntax error; metadata is read from the parsed source")], None
    problems: list[Problem] = []
    for name, line in source.not_literal.items():
        problems.append(Problem(file, name, f"assigned an expression at line {line}, not a literal",
                                "use a plain literal (a quoted string, number, list or dict); the file "
                                "is read without running it"))
    values = source.values
    if not source.description:
        problems.append(Problem(file, "description", "the module has no docstring",
                                'start the file with a docstring: """What the tool does, in one line."""'))
    problems += _check_version(values, source, file)
    tool_type = values.get("__tool_type__")
    known = ", ".join(t.value for t in FILE_TOOL_TYPES)
    if "__tool_type__" not in values and "__tool_type__" not in source.not_literal:
        problems.append(Problem(file, "__tool_type__", "missing", f'add __tool_type__ = "python" (one of {known})'))
    elif tool_type == ToolType.PRIMITIVE:
        problems.append(Problem(file, "__tool_type__", "primitives are built into codeward (subprocess, "
                                "http_client) and cannot be defined by a file",
                                f"use one of {known} and point __executor_id__ at a primitive or runtime"))
    elif "__tool_type__" in values and tool_type not in {t.value for t in FILE_TOOL_TYPES}:
        problems.append(Problem(file, "__tool_type__", f"{tool_type!r} is not a tool type", f"use one of {known}"))
    if "__executor_id__" not in values and "__executor_id__" not in source.not_literal:
        problems.append(Problem(file, "__executor_id__", "missing",
                                'add __executor_id__ = "python_runtime" (or "http_client" for api tools)'))
    elif "__executor_id__" in values:
        executor = values["__executor_id__"]
        if executor is None and tool_type != ToolType.MCP_TOOL:
            problems.append(Problem(file, "__executor_id__", "None is only allowed for mcp_tool items",
                                    'name the executor, e.g. "python_runtime", "subprocess" or "http_client"'))
        elif executor is not None and tool_type == ToolType.MCP_TOOL:
            problems.append(Problem(file, "__executor_id__", "an mcp_tool item calls a served tool directly",
                                    "set __executor_id__ = None"))
        elif executor is not None and (not isinstance(executor, str) or not NAME_PATTERN.match(executor)):
            problems.append(Problem(file, "__executor_id__", f"{executor!r} is not an item name",
                                    'give the name of a runtime or primitive, e.g. "python_runtime"'))
    category = values.get("__category__")
    if "__category__" not in values and "__category__" not in source.not_literal:
        problems.append(Problem(file, "__category__", "missing", 'add __category__ = "utility" (any short word)'))
    elif "__category__" in values and (not isinstance(category, str) or not category.strip()):
        problems.append(Problem(file, "__category__", f"{category!r} is not a category name",
                                'give a non-empty string such as "utility"'))
    problems += check_dependencies(values, file)
    problems += _check_declarations(values, file)
    problems += _check_by_type(tool_type, values, source, file)
    schema, schema_problems = _parse_schema(source.schema_text, file)
    return problems + schema_problems, schema


def check_document(fields: dict[str, Any], error: str, file: str, *, directive: bool) -> list[Problem]:
    """Problems of a directive's or knowledge item's front matter."""
    if error:
        return [Problem(file, "front matter", error, "fix the YAML between the two '---' lines")]
    problems: list[Problem] = []
    description = fields.get("description")
    if directive and not (isinstance(description, str) and description.strip()):
        problems.append(Problem(file, "description", "missing from the front matter",
                                "add 'description: what this directive is for' between the '---' lines"))
    elif description is not None and not isinstance(description, str):
        problems.append(Problem(file, "description", "must be text", "write it as a single line of text"))
    version = fields.get("version")
    if version is not None and not (isinstance(version, str) and SEMVER.match(version)):
        problems.append(Problem(file, "version", f"{version!r} is not a semantic version",
                                "write it quoted as MAJOR.MINOR.PATCH, e.g. version: \"1.0.0\""))
    for key in ("category", "title"):
        if key in fields and not isinstance(fields[key], str):
            problems.append(Problem(file, key, "must be text", f"write {key} as a single word or line"))
    arguments = fields.get("arguments", [])
    if not isinstance(arguments, list):
        problems.append(Problem(file, "arguments", "must be a list",
                                "write '- name: x' entries, each with description and required"))
    else:
        for index, argument in enumerate(arguments):
            if not isinstance(argument, dict) or not isinstance(argument.get("name"), str) \
                    or not re.match(r"^[A-Za-z_][A-Za-z0-9_-]*$", argument["name"]):
                problems.append(Problem(file, f"arguments[{index}]", "needs a 'name' (letters, digits, '_')",
                                        "write '- name: topic' with optional description and required: true"))
    return problems


def _check_version(values: dict[str, Any], source: ToolSource, file: str) -> list[Problem]:
    if "__version__" in source.not_literal:
        return []
    if "__version__" not in values:
        return [Problem(file, "__version__", "missing", f"add {TEMPLATE}")]
    version = values["__version__"]
    if not isinstance(version, str) or not SEMVER.match(version):
        return [Problem(file, "__version__", f"{version!r} is not a semantic version",
                        'write MAJOR.MINOR.PATCH as a string, e.g. __version__ = "1.2.0"')]
    return []


def _check_declarations(values: dict[str, Any], file: str) -> list[Problem]:
    """``__env__`` names host variables; ``__network__`` names hosts. Both are what the sandbox
    gives the tool — and all it gives it."""
    problems: list[Problem] = []
    env = values.get("__env__", [])
    if not isinstance(env, list | tuple) or not all(isinstance(v, str) and ENV_NAME.match(v) for v in env):
        problems.append(Problem(file, "__env__", "must be a list of environment variable names",
                                'write e.g. __env__ = ["GITHUB_TOKEN"]: only these reach the tool'))
    hosts = values.get("__network__", [])
    if not isinstance(hosts, list | tuple) or not all(isinstance(h, str) and HOST_NAME.match(h) for h in hosts):
        problems.append(Problem(file, "__network__", "must be a list of host names (no scheme, port or path)",
                                'write e.g. __network__ = ["api.github.com"]: without it the tool has no network'))
    declared = set(env) if isinstance(env, list | tuple) else set()
    config = values.get("CONFIG")
    for key in ("env", "headers"):
        section = config.get(key) if isinstance(config, dict) else None
        for value in (section or {}).values() if isinstance(section, dict) else ():
            for variable in ENV_REFERENCE.findall(str(value)):
                if variable not in declared:
                    problems.append(Problem(file, f"CONFIG.{key}", f"uses ${{{variable}}}, which the item does not "
                                            "declare", f'add __env__ = ["{variable}"]: a tool reads only the host '
                                            "variables it declares"))
    return problems


def _check_by_type(tool_type: Any, values: dict[str, Any], source: ToolSource, file: str) -> list[Problem]:
    config = values.get("CONFIG")
    if "CONFIG" in values and not isinstance(config, dict):
        return [Problem(file, "CONFIG", "must be a dict", "write CONFIG = {...} with string keys")]
    config = config or {}
    if tool_type == ToolType.PYTHON and not source.has_main:
        return [Problem(file, "main", "a python tool needs a main function",
                        "add 'def main(**params):' returning a JSON-serializable result")]
    if tool_type == ToolType.API:
        url = config.get("url")
        if not isinstance(url, str) or not url.strip():
            return [Problem(file, "CONFIG.url", "an api tool needs the URL it calls",
                            'add CONFIG = {"method": "GET", "url": "https://host/path/{param}"}')]
        method = str(config.get("method", "GET")).upper()
        if method not in HTTP_METHODS:
            return [Problem(file, "CONFIG.method", f"{method!r} is not an HTTP method",
                            f"use one of {', '.join(sorted(HTTP_METHODS))}")]
    if tool_type == ToolType.MCP_TOOL and not isinstance(config.get("tool"), str):
        return [Problem(file, "CONFIG.tool", "an mcp_tool item names the served tool it calls",
                        'add CONFIG = {"tool": "read_file", "arguments": {...defaults}}')]
    return []


def _parse_schema(text: str, file: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    if not text:
        return None, []
    import jsonschema
    import yaml

    try:
        schema = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, [Problem(file, "Config Schema", f"the section is neither JSON nor YAML ({exc})",
                              "write a JSON Schema object after the 'Config Schema:' line")]
    if not isinstance(schema, dict):
        return None, [Problem(file, "Config Schema", "must be a JSON Schema object",
                              'write e.g. {"type": "object", "properties": {"name": {"type": "string"}}}')]
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return None, [Problem(file, "Config Schema", f"not a valid JSON Schema: {exc.message}",
                              "fix the schema; see https://json-schema.org/understanding-json-schema")]
    return schema, []
