"""The COBOL copybook compiler: copybook text → item tree → record layouts → table definitions.

It runs in passes, as Cobrix does (STYLE.md §1), one module per job:

* ``tokens`` — text → tokens that keep their original line and column;
* ``entries`` — tokens → a tree of entries (levels and clauses), with ``picture`` parsing PIC
  strings;
* ``sizing`` — usages, REDEFINES and limits checked, sizes bottom-up and offsets top-down, the tree
  frozen into ``Item``s;
* ``flatten`` and ``naming`` — one ``RecordLayout`` per 01 record: a flat tuple of elementary
  fields, OCCURS expanded, columns named;
* ``compiler`` — the passes put together (``compile_copybook``, ``compile_copybook_file``);
* ``definitions`` — the DEFGEN tables of sourcedefs.md §7.1;
* ``listing`` — the layout listing in Cobrix's form;
* ``model`` — the frozen result every other module reads.

Parsers never look at a PIC string: every field carries its usage, digits, scale and sign rules.
"""

from gendef.copybook.compiler import compile_copybook, compile_copybook_file
from gendef.copybook.definitions import (
    column_fields,
    copybook_definitions,
    copybook_table_name,
    date_format_length,
    field_column,
)
from gendef.copybook.flatten import item_field
from gendef.copybook.listing import LAYOUT_HEADER, layout_listing
from gendef.copybook.model import (
    COMP,
    COMP1,
    COMP2,
    COMP3,
    COMP5,
    DISPLAY,
    IMPLICIT_RECORD,
    MAX_BINARY_DIGITS,
    MAX_FIELDS,
    MAX_OCCURS,
    MAX_RECORD_SIZE,
    Copybook,
    FieldLayout,
    Item,
    Odo,
    Picture,
    RecordLayout,
    clean_name,
    normalize_name,
)
from gendef.copybook.naming import unique_columns
from gendef.copybook.picture import parse_picture
from gendef.copybook.sizing import binary_size
from gendef.copybook.tokens import Token, tokenize

__all__ = [
    "COMP", "COMP1", "COMP2", "COMP3", "COMP5", "DISPLAY", "IMPLICIT_RECORD", "LAYOUT_HEADER",
    "MAX_BINARY_DIGITS", "MAX_FIELDS", "MAX_OCCURS", "MAX_RECORD_SIZE", "Copybook", "FieldLayout",
    "Item", "Odo", "Picture", "RecordLayout", "Token", "binary_size", "clean_name",
    "column_fields", "compile_copybook", "compile_copybook_file", "copybook_definitions",
    "copybook_table_name", "date_format_length", "field_column", "item_field", "layout_listing", "normalize_name",
    "parse_picture", "tokenize", "unique_columns",
]
