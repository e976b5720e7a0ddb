"""Starting points for new items: files that pass validation as written, ready to edit and sign."""

from __future__ import annotations

from codeward.engines.registry.items import Kind

PYTHON_TOOL = '''"""{description}

Config Schema:
    {{
      "type": "object",
      "properties": {{
        "name": {{"type": "string", "description": "Who to greet"}}
      }},
      "required": ["name"],
      "additionalProperties": false
    }}
"""

__version__ = "0.1.0"
__tool_type__ = "python"
__executor_id__ = "python_runtime"
__category__ = "{category}"


def main(name: str) -> dict:
    """Called with the parameters as keyword arguments; return anything JSON can hold."""
    return {{"greeting": f"Hello, {{name}}!"}}
'''

API_TOOL = '''"""{description}

Config Schema:
    {{
      "type": "object",
      "properties": {{
        "id": {{"type": "string", "description": "Which item to fetch"}}
      }},
      "required": ["id"]
    }}
"""

__version__ = "0.1.0"
__tool_type__ = "api"
__executor_id__ = "http_client"
__category__ = "{category}"

CONFIG = {{
    "method": "GET",
    "url": "https://example.com/items/{{id}}",
    "headers": {{"Accept": "application/json"}},
    "timeout": 30,
}}
'''

DIRECTIVE = '''---
description: {description}
category: {category}
version: "0.1.0"
arguments:
  - name: path
    description: The file to work on
    required: true
---
# {name}

Steps for the agent to follow with {{{{path}}}}:

1. Read the file.
2. ...
'''

KNOWLEDGE = '''---
description: {description}
category: {category}
tags: []
---
# {name}

What is worth remembering about this topic.
'''


def scaffold(kind: Kind, name: str, *, tool_type: str = "python", category: str = "",
             description: str = "") -> str:
    """The text of a new, valid item file."""
    category = category.split("/")[-1] if category else ("utility" if kind is Kind.TOOL else "general")
    if kind is Kind.TOOL:
        template = API_TOOL if tool_type == "api" else PYTHON_TOOL
        summary = description or ("Fetch an item from an HTTP API." if tool_type == "api" else "Greet someone.")
        return template.format(description=summary, category=category)
    if kind is Kind.DIRECTIVE:
        return DIRECTIVE.format(description=description or f"How to {name.replace('_', ' ')}", category=category,
                                name=name)
    return KNOWLEDGE.format(description=description or f"Notes on {name.replace('_', ' ')}", category=category,
                            name=name)
