"""Functions generated as Python source and compiled once (per table, layout or record shape).

The fast paths (fixed-width record and text images, delimited rows, the trail encoder's column
and record functions) are source text built at start and compiled here, the one place that runs
``exec``. Each source is registered in ``linecache`` under a label such as ``<msgcap-generated
trail record encoder for S.CUST #1a2b3c4d>``, so a traceback out of generated code shows its
lines; ``generated_source`` returns the whole text of a generated function for reading::

    from parsers.codegen import generated_source
    print(generated_source(encoder._fast))

Generated code that falls back to a general path catches only the exceptions it names (a value
not in its common form); anything else, such as a NameError or an AttributeError of a bug, goes
up to the caller.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from typing import Any

_PREFIX = "<msgcap-generated "


def compile_function(source: str, namespace: dict[str, Any], name: str, label: str
                     ) -> Callable[..., Any]:
    """The function ``name`` that ``source`` defines, run in ``namespace`` (which it fills).

    ``label`` says what it is ("trail record encoder for S.CUST"); a hash of the source makes
    the file name unique, so two generated functions of one label never show each other's
    lines.
    """
    digest = hashlib.blake2b(source.encode(), digest_size=4).hexdigest()
    filename = f"{_PREFIX}{label} #{digest}>"
    # mtime None: linecache.checkcache keeps the entry (there is no file to compare with)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated source
    return namespace[name]


def generated_source(function: Callable[..., Any]) -> str:
    """The source text of a function made by ``compile_function`` (ValueError for another)."""
    filename = function.__code__.co_filename
    if not filename.startswith(_PREFIX):
        raise ValueError(f"{function!r} is not a generated function")
    return "".join(linecache.getlines(filename))
