"""Logging for every command, per ``gg.log.level`` and ``gg.log.file`` (properties.md §11).

The project's loggers (``props``, ``gendef``, ``parsers``, ``msgcap``) log at the configured
level; other libraries only reach the handlers with warnings. Warnings and errors always go to
stderr; ``msgcap run`` and ``msgcap batch`` (``log_to_file``) also write everything at the level
to a log file (``gg.log.file``; batch: ``DIR/batch.log``), while the other commands log to stderr
only. Calling it again replaces what it installed.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from props.errors import PropertyError, SourceError
from props.settings import Settings
from props.text import printable_line

PROJECT_LOGGERS = ("props", "gendef", "parsers", "msgcap")

LEVELS = {
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": logging.DEBUG,
}

_MARK = "_msgcap_handler"  # attribute on the handlers this module installs
# ``extra`` of a record for the log file only: the CLI prints the error that stops a command on
# stderr itself, so that line is not written to stderr twice.
FILE_ONLY = {"file_only": True}


class _PrintableFormatter(logging.Formatter):
    """Every log line escaped and bounded: messages quote ids, file names and values from
    outside, which must not forge lines or flood the log (``props.text``)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable_line(record.message)
        return super().formatMessage(record)


class _UtcFormatter(_PrintableFormatter):
    converter = staticmethod(time.gmtime)
    default_msec_format = "%s.%03dZ"


class _LogFile(logging.FileHandler):
    """The log file. When it cannot be written (a full file system) one line on stderr says
    so, not a traceback per log line, and the command goes on: the log holds no data. The
    stream retries what it could not write with the next line (as far as its buffer holds);
    the warning comes again only after a line could be written."""

    def __init__(self, path: Path, command: str) -> None:
        super().__init__(path, encoding="utf-8")
        self.command = command
        self.failing = self._failed = False

    def emit(self, record: logging.LogRecord) -> None:
        self._failed = False
        super().emit(record)  # calls handleError when the write fails
        self.failing = self._failed

    def handleError(self, record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            super().handleError(record)
            return
        self._failed = True
        if not self.failing:
            print(printable_line(f"{self.command}: WARNING: {self.baseFilename}: cannot write "
                                 f"the log file: {exc.strerror or exc}; log lines may be lost "
                                 "until it can be written again"), file=sys.stderr, flush=True)


def configure_logging(settings: Settings | None, *, command: str, log_to_file: bool,
                      log_file: str | None = None) -> None:
    """Install stderr (and log-file) handlers; ``settings`` None means INFO, stderr only;
    ``log_file`` instead of ``gg.log.file``."""
    level = LEVELS.get(settings.log.level.upper(), logging.INFO) if settings else logging.INFO
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _MARK, False)]:
        root.removeHandler(handler)
        handler.close()

    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(_PrintableFormatter(f"{command}: %(levelname)s: %(message)s"))
    stderr.addFilter(lambda record: not getattr(record, "file_only", False))
    handlers: list[logging.Handler] = [stderr]
    if log_to_file and settings is not None:
        stderr.setLevel(logging.WARNING)
        handlers.append(_file_handler(settings, command, log_file))
    for handler in handlers:
        setattr(handler, _MARK, True)
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name in PROJECT_LOGGERS:
        logging.getLogger(name).setLevel(level)


def _file_handler(settings: Settings, command: str, log_file: str | None) -> logging.Handler:
    path = Path(log_file or settings.log_file)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(path, command)
    except OSError as exc:
        if log_file:
            raise SourceError(f"cannot open log file: {exc.strerror}", url=log_file) from None
        raise PropertyError(f"cannot open log file {path}: {exc.strerror}", prop="gg.log.file",
                            file=settings.file, line=settings.lines.get("gg.log.file")) from None
    handler.setFormatter(_UtcFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    return handler
