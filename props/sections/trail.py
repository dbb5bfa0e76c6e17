"""The ``trail.*`` section (properties.md §10.1): where and how the trail files are written."""

from __future__ import annotations

import re

from props.reader import MAX_URI_BYTES, Reader, path_problem, split_list
from props.settings import PurgeSettings, TrailSettings
from props.text import quoted

_TRAIL = TrailSettings()  # the defaults of unset properties
_EXTRACT = re.compile(r"[A-Z][A-Z0-9_$]{0,7}\Z")
_TRAIL_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]\Z")


def trail_settings(r: Reader) -> TrailSettings:
    path = r.path("trail.path") or _TRAIL.path
    prefix = path.rpartition("/")[2]
    if not _TRAIL_PREFIX.match(prefix):
        raise r.error("trail.path", f"{quoted(path)} is not DIR/XX: the file prefix must be "
                      "two characters, a letter then a letter or digit")
    extract = (r.text("trail.extract") or _TRAIL.extract).upper()
    if not _EXTRACT.match(extract):
        raise r.error("trail.extract", f"{quoted(extract)} is not 1–8 characters of A-Z, "
                      "0-9, _ and $ starting with a letter")
    seqlen = r.text("trail.seqlen")
    if seqlen is not None and seqlen not in ("6", "9"):
        raise r.error("trail.seqlen", f"{quoted(seqlen)} is not 9 or 6")
    megabytes = r.integer("trail.megabytes", None, 1, 2000) or _TRAIL.megabytes
    return TrailSettings(
        path=path,
        seqlen=int(seqlen) if seqlen is not None else _TRAIL.seqlen,
        megabytes=megabytes,
        sync=r.choice("trail.sync", ("transaction", "batch", "none"), _TRAIL.sync),
        byteorder=r.choice("trail.byteorder", ("big", "little"), _TRAIL.byteorder),
        compressupdates=r.boolean("trail.compressupdates", _TRAIL.compressupdates),
        getupdatebefores=r.boolean("trail.getupdatebefores", _TRAIL.getupdatebefores),
        compressdeletes=r.boolean("trail.compressdeletes", _TRAIL.compressdeletes),
        defs=r.path("trail.defs"),
        extract=extract,
        uri=_uri(r),
        purge=_purge(r, megabytes),
    )


def _purge(r: Reader, megabytes: int) -> PurgeSettings:
    """``trail.purge.*`` (§10.1.1). A size limit below one file's would be exceeded by the file
    being written alone, which is never purged."""
    maxmegabytes = r.integer("trail.purge.maxmegabytes", None, 1)
    if maxmegabytes is not None and maxmegabytes < megabytes:
        raise r.error("trail.purge.maxmegabytes", f"{maxmegabytes} is less than trail.megabytes="
                      f"{megabytes}: the file being written alone would exceed it")
    readers: list[str] = []
    listed = r.text("trail.purge.readers")
    for path in split_list(listed) if listed is not None else ():
        problem = "an empty path in the list" if not path else path_problem(path)
        if problem:
            raise r.error("trail.purge.readers", problem)
        readers.append(path)
    return PurgeSettings(minkeepfiles=r.integer("trail.purge.minkeepfiles", None, 1),
                         minkeephours=r.integer("trail.purge.minkeephours", None, 1),
                         maxmegabytes=maxmegabytes, readers=tuple(readers))


def _uri(r: Reader) -> str | None:
    value = r.text("trail.uri")
    if value is not None and len(value.encode("utf-8", "surrogateescape")) > MAX_URI_BYTES:
        raise r.error("trail.uri", f"{len(value.encode('utf-8', 'surrogateescape'))} "
                      f"bytes; the trail file header holds at most {MAX_URI_BYTES}")
    return value
