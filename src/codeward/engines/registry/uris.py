"""The URIs the registry serves its knowledge items under (``registry://knowledge/<name>``)."""

KNOWLEDGE_SCHEME = "registry://knowledge/"
KNOWLEDGE_TEMPLATE = KNOWLEDGE_SCHEME + "{name}"
