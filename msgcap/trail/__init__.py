"""GoldenGate trail files (spec/trail-format.md).

* ``records`` — what callers hand the writer: ``TrailRecord``, ``TrailTransaction``, IOTYPE_*,
  ``Position``.
* ``writer`` — ``TrailWriter``: naming, roll-over, durability, crash recovery (``open()`` →
  ``Recovery``), ``write_transaction``, ``write_records`` (parts), ``append_encoded``.
* ``encoder`` — ``TrailEncoder`` / ``encode_transaction``: pure record encoding.
* ``reader`` — ``TrailFile`` (one file, forwards/backwards) and ``TrailReader`` (a sequence).
* ``fileheader``, ``columns``, ``layout``, ``julian`` — the F record, column spans, Structs,
  Julian-microsecond times; ``dumpfmt`` — what ``msgcap dump`` prints.
"""
