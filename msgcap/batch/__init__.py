"""Spark batch replay of message dumps (properties.md §13.1): ``msgcap batch``.

The trail must equal what ``msgcap replay`` writes for the same inputs, although the messages
are parsed in parallel tasks and the assembler's state (``*seqid``/``*txid`` counters, the
duplicate mark, a txind transaction left open) runs across the borders between them. Every
message is parsed once; the driver stays the only writer of the trail.

Modules, in the order the data flows (only ``jobs`` and ``session`` import pyspark):

* ``inputs``   — the input files in order, and the scans Spark reads them in;
* ``segments`` — the byte strings a task gets, back into messages, per segment (a block of a
  file's lines, or a file read whole);
* ``direct``   — the one pass (tasks): the common input, counted first, parsed and encoded
  from each segment's true start at once; the driver falls back to the two passes below;
* ``parse``    — pass 1 (tasks): ids, parse, records with encoded columns, trials of the
  assembler; kept by Spark for pass 2;
* ``plan``     — the driver's plan: the assembler's state at each segment's start, in order;
* ``encode``   — pass 2 (tasks): the planned segment's transactions framed into trail bytes;
* ``rows``     — ``--format parquet,json`` rows;
* ``driver``   — ``run_batch``: the passes, the ordered append, the outputs;
* ``jobs``     — Spark: listing and reading the inputs, the jobs, the rows writers;
* ``session``  — the SparkSession (local or cluster, the executors' Python environment).
"""
