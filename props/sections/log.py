"""The ``gg.log*`` keys (properties.md §11): the level and file of msgcap's own log."""

from __future__ import annotations

from props.reader import Reader
from props.settings import LogLevel, LogSettings
from props.text import quoted

_LOG = LogSettings()  # the defaults of unset properties
_LOG_LEVELS: dict[str, LogLevel] = {"ERROR": "ERROR", "WARN": "WARN", "WARNING": "WARN",
                                    "INFO": "INFO", "DEBUG": "DEBUG", "TRACE": "DEBUG"}


def log_settings(r: Reader) -> LogSettings:
    r.choice("gg.log", ("JDK", "log4j", "logback"), "JDK")
    text = r.text("gg.log.level")
    level: LogLevel = _LOG.level
    if text is not None:
        found = _LOG_LEVELS.get(text.upper())
        if found is None:
            raise r.error("gg.log.level",
                          f"{quoted(text)} is not ERROR, WARN, INFO or DEBUG")
        level = found
    return LogSettings(level=level, file=r.path("gg.log.file"))
