"""The measurement bench_fixed.py and bench_replay_delim.py share: parse only, then replay end to
end into a durable trail, with the same properties, parser and definitions, in this process.

Run from the benchmark's working directory (``dirprm/bench.properties``, the dump, ``dirdat/``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from gendef.build import build_definitions
from msgcap.dumps import read_messages
from msgcap.pipeline import Stats, build_pipeline
from msgcap.trail.writer import TrailWriter
from parsers.base import build_parser
from props.loader import load_settings

Seconds = tuple[float, float]  # (wall, CPU)


@dataclass
class ReplayTiming:
    parse: Seconds
    replay: Seconds
    stats: Stats
    trail_mb: float
    settings: Any
    definitions: Any
    parser: Any


def _since(t0: float, c0: float) -> Seconds:
    return time.perf_counter() - t0, time.process_time() - c0


def time_parse_and_replay(dump: str, lines: bool, n: int) -> ReplayTiming:
    """Time parsing every message of ``dump``, then a full replay of it; both must see n ops."""
    settings = load_settings("dirprm/bench.properties")
    definitions = build_definitions(settings)
    parser = build_parser(settings, definitions)
    messages = list(read_messages([dump], lines=lines))
    t0, c0 = time.perf_counter(), time.process_time()
    ops = 0
    for message in messages:
        ops += len(parser.parse(message))
    parse_s = _since(t0, c0)
    assert ops == n
    del messages

    t0, c0 = time.perf_counter(), time.process_time()
    trail = settings.trail
    writer = TrailWriter(trail.path, seqlen=trail.seqlen, megabytes=trail.megabytes,
                         byteorder=trail.byteorder, sync=trail.sync, extract=trail.extract)
    pipeline = build_pipeline(settings, writer, writer.open(), definitions=definitions,
                              parser=parser)
    for _ in pipeline.process_many(read_messages([dump], lines=lines)):
        pass
    pipeline.finish()
    writer.flush_durable()
    os.fsync(os.open(writer.position.file, os.O_RDONLY))
    writer.close()
    replay_s = _since(t0, c0)
    stats = pipeline.stats
    assert stats.total_operations == n, stats.summary()
    trail_mb = sum(os.path.getsize(os.path.join("dirdat", f)) for f in os.listdir("dirdat")) / 1e6
    return ReplayTiming(parse_s, replay_s, stats, trail_mb, settings, definitions, parser)
