"""Which PyPI packages a tool needs: declared in ``__dependencies__``, else found from its imports.

Imports of the standard library (``sys.stdlib_module_names``) and of local modules (beside
the tool or in a ``tools/lib`` folder) need nothing. An import name is mapped to its
distribution through the installed packages' metadata when the server happens to have it,
then through a table of well-known mismatches (``yaml`` is ``PyYAML``), else used as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codeward.registry.items import Item

WELL_KNOWN: dict[str, str] = {
    "yaml": "PyYAML",
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "attr": "attrs",
    "Crypto": "pycryptodome",
    "magic": "python-magic",
    "serial": "pyserial",
    "git": "GitPython",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "fitz": "PyMuPDF",
    "multipart": "python-multipart",
    "slugify": "python-slugify",
    "zmq": "pyzmq",
    "usb": "pyusb",
}


def requirements_of(item: Item) -> list[str]:
    """The requirement strings to install for a tool (empty: it needs the standard library only)."""
    declared = item.meta.get("dependencies")
    if isinstance(declared, list):
        return sorted({str(d).strip() for d in declared if str(d).strip()})
    return sorted({distribution_for(name) for name in item.meta.get("imports") or []})


def distribution_for(module: str, installed: Mapping[str, Sequence[str]] | None = None) -> str:
    """The PyPI distribution that provides a top-level import name."""
    if installed is None:
        from importlib.metadata import packages_distributions

        installed = packages_distributions()
    found = installed.get(module)
    if found:
        return found[0]
    return WELL_KNOWN.get(module, module)
