"""One module per properties section, each building its settings from a ``props.reader.Reader``:

* ``jms`` — ``jms.*``: source URLs, destination, TLS files, message ids, heartbeats, reports;
* ``trail`` — ``trail.*``; ``error`` — ``error.*``; ``log`` — ``gg.log*``;
* ``report`` — ``report.http*`` and ``report.heartbeat``;
* ``common`` — what the parser sections share: operation and transaction codes, date formats,
  user-defined tables, sourcedefs;
* ``fixed``, ``delim``, ``xml`` — the parser sections (``xml`` also finds the declared rules,
  which the loader needs to classify rule keys).

``props.loader`` collects the entries, classifies every key and calls these builders.
"""
