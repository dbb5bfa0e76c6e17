"""The measurement bench_fixed.py and bench_replay_delim.py share: parse only, then replay end to
end into a durable trail, with the same properties, parser and definitions, in this process.

Run from the benchmark's working directory (``dirprm/bench.properties``, the dump, ``dirdat/``).
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass
from typing import Any

from gendef.build import build_definitions
from msgcap.commands.replay import PROGRESS_INTERVAL, Progress, replay_messages
from msgcap.dumps import read_messages
from msgcap.pipeline import AHEAD, Stats, build_pipeline
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
    # the loop of ``msgcap replay``, progress lines included (at its default interval)
    replay_messages(pipeline, read_messages([dump], lines=lines),
                    Progress(io.StringIO(), PROGRESS_INTERVAL))
    writer.flush_durable()
    os.fsync(os.open(writer.position.file, os.O_RDONLY))
    writer.close()
    replay_s = _since(t0, c0)
    stats = pipeline.stats
    assert stats.total_operations == n, stats.summary()
    trail_mb = sum(os.path.getsize(os.path.join("dirdat", f)) for f in os.listdir("dirdat")) / 1e6
    return ReplayTiming(parse_s, replay_s, stats, trail_mb, settings, definitions, parser)


def time_stages(dump: str, lines: bool, n: int, chunk: int = AHEAD) -> dict[str, float]:
    """CPU seconds of each stage of a replay of ``dump``, run apart over chunks of ``chunk``
    messages (the replay's own batch, so caches, memory and the garbage collector see what a
    replay sees): reading the dump into
    messages (JSON Lines or text lines, base64), ids, parsing, assembling transactions, trail
    encoding, and appending the encoded bytes to a file (one ``write`` per MB, as the writer
    does). The garbage collector is off while they run (it would charge whichever stage
    allocates when it runs for the objects of all of them): ``msgcap replay`` end to end minus
    their sum is the pipeline's own bookkeeping and the garbage collector."""
    import gc
    from itertools import islice

    from msgcap.assembler import Assembler, ImageRules
    from msgcap.msgid import MessageIds
    from msgcap.trail.encoder import TrailEncoder

    settings = load_settings("dirprm/bench.properties")
    definitions = build_definitions(settings)
    parser = build_parser(settings, definitions)
    ids = MessageIds(settings.jms.id)
    assembler = Assembler(ImageRules.from_settings(settings))
    encoder = TrailEncoder(settings.trail.byteorder)
    clock = time.process_time
    spent = dict.fromkeys(("reading the dump → messages", "message ids", "parsing → Op",
                           "assembling → transactions", "trail encoding", "writing"), 0.0)
    keys = list(spent)
    it = read_messages([dump], lines=lines)
    txnum = count = 0
    pending: list[bytes] = []
    size = 0
    fd = os.open("stages.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    gc.disable()
    try:
        while True:
            c0 = clock()
            messages = list(islice(it, chunk))
            c1 = clock()
            spent[keys[0]] += c1 - c0
            if not messages:
                break
            for message in messages:
                message.id = ids.next_id(message)
            c2 = clock()
            parsed = [parser.parse(message) for message in messages]
            c3 = clock()
            done = [assembler.add(message, ops).completed
                    for message, ops in zip(messages, parsed, strict=True)]
            c4 = clock()
            encoded = []
            for completed in done:
                for assembled in completed:
                    txnum += 1
                    encoded.append(encoder.encode_transaction(assembled.tx, txnum))
            c5 = clock()
            for data in encoded:
                pending.append(data)
                size += len(data)
                if size >= 1 << 20:
                    os.write(fd, b"".join(pending))
                    pending, size = [], 0
            c6 = clock()
            count += len(messages)
            del messages, parsed, done, encoded
            gc.collect(0)
            for key, seconds in zip(keys[1:], (c2 - c1, c3 - c2, c4 - c3, c5 - c4, c6 - c5),
                                    strict=True):
                spent[key] += seconds
        c0 = clock()
        os.write(fd, b"".join(pending))
        spent[keys[-1]] += clock() - c0
    finally:
        gc.enable()
        os.close(fd)
        os.unlink("stages.out")
    assert count == n and txnum == n, (count, txnum)
    return spent
