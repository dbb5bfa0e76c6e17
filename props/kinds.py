"""What a text file looks like, so that a file given in the wrong place is named for what it is.

``gendef -prop dirdef/retail.cpy`` read a copybook as properties (one warning per line, then
"parser.type: required"); ``msgcap dump --defs dirprm/jmsvam.properties`` read properties as
source definitions. The commands' errors say instead what the file looks like and where it goes.
The first significant line (not blank, not a comment) decides.
"""

from __future__ import annotations

import re

COPYBOOK = "a COBOL copybook"
DEFGEN = "source definitions (DEFGEN)"
PROPERTIES = "a msgcap properties file"

_KINDS = (
    (DEFGEN, re.compile(r"(Database type|Character set ID|Definition for table)\b")),
    # an optional sequence number, a level number, a data name or the entry's period
    (COPYBOOK, re.compile(r"(\d{6}\s*)?\d{1,2}\s+([A-Za-z][\w-]*|\.)(\s|\.|$)")),
    (PROPERTIES, re.compile(r"[A-Za-z][\w$-]*(\.[\w$-]+)+\s*[=:]")),
)


def looks_like(text: str) -> str | None:
    """``COPYBOOK``, ``DEFGEN`` or ``PROPERTIES`` by the first significant line; None: unknown."""
    for line in text.lstrip("\ufeff").splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "*#!":
            continue
        return next((kind for kind, pattern in _KINDS if pattern.match(stripped)), None)
    return None


def misplaced(text: str, path: str, expected: str) -> str | None:
    """Why file ``path`` holding ``text`` is not what a command ``expected`` and where it goes;
    None when it looks like what was expected, or like nothing known."""
    kind = looks_like(text)
    if kind is None or kind == expected:
        return None
    if kind == COPYBOOK:
        use = f"use it as fixed.copybook={path} in the properties file"
    elif kind == DEFGEN:
        use = (f"use it as fixed.sourcedefs={path} (delim.sourcedefs, xml.sourcedefs) in the "
               f"properties file, or as msgcap dump --defs {path}")
    else:
        found = re.search(r"^\s*trail\.defs\s*[=:]\s*(\S.*?)\s*$", text, re.MULTILINE)
        use = (f"the definitions of its tables are in {found.group(1)} (its trail.defs)" if found
               else f"gendef -prop {path} writes the definitions of its tables")
    return f"looks like {kind}, not {expected}: {use}"
