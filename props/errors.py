"""The project's exceptions: every error a user can cause is a MsgcapError.

They live in the lowest layer so every package can raise them without an upward import.
The CLI prints ``str(error)`` as one line and exits non-zero; anything else is a bug. That line
often quotes outside text (message ids, file names, values, URLs), so it is made printable here,
once for every error: control characters escaped, user information of URLs redacted, bounded.
"""

from __future__ import annotations

from props.text import LINE_CHARS, printable_line, shown

_PART_CHARS = LINE_CHARS // 4  # a message name or position inside the line


class MsgcapError(Exception):
    """Base of all user-facing errors; ``str()`` is the one (printable) line the CLI prints."""

    exit_code = 2

    def __init__(self, message: str = "") -> None:
        super().__init__(printable_line(str(message)))


class PropertyError(MsgcapError):
    """A bad property: ``file:line: property: reason``."""

    def __init__(self, reason: str, *, prop: str | None = None, file: str | None = None,
                 line: int | None = None) -> None:
        self.reason, self.prop, self.file, self.line = reason, prop, file, line
        where = f"{file}:{line}: " if file and line else (f"{file}: " if file else "")
        what = f"{prop}: " if prop else ""
        super().__init__(f"{where}{what}{reason}")


class DefinitionError(MsgcapError):
    """A bad source-definitions file or table definition: ``file:line: reason``."""

    def __init__(self, reason: str, *, file: str | None = None, line: int | None = None) -> None:
        self.reason, self.file, self.line = reason, file, line
        where = f"{file}:{line}: " if file and line else (f"{file}: " if file else "")
        super().__init__(f"{where}{reason}")


class CopybookError(MsgcapError):
    """A copybook syntax or semantic error: ``file:line:column: field F: reason``."""

    def __init__(self, reason: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None, field: str | None = None) -> None:
        self.reason, self.file, self.line, self.column, self.field = (
            reason, file, line, column, field)
        where = file or "<copybook>"
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        what = f"field {field}: " if field else ""
        super().__init__(f"{where}: {what}{reason}")


class MessageError(MsgcapError):
    """A message that cannot be parsed or converted; handled by ``error.policy``.

    ``source`` names the message (its id, or file:line of a dump), ``position`` the field,
    record, offset or XPath inside it.
    """

    def __init__(self, reason: str, *, source: str | None = None,
                 position: str | None = None) -> None:
        # each part bounded on its own: the discard file stores them apart from the message
        self.reason = shown(reason, LINE_CHARS)
        self.source = shown(source, _PART_CHARS) if source else source
        self.position = shown(position, _PART_CHARS) if position else position
        reason, source, position = self.reason, self.source, self.position
        parts = [f"message {source}" if source else None, position, reason]
        super().__init__(": ".join(p for p in parts if p))

    def located(self, source: str) -> MessageError:
        """The same error naming the message, for layers that know it only later."""
        if self.source:
            return self
        return MessageError(self.reason, source=source, position=self.position)


class TrailError(MsgcapError):
    """A trail file that is not a trail, is corrupt, or cannot be written: ``file: RBA n: reason``."""

    def __init__(self, reason: str, *, file: str | None = None, rba: int | None = None) -> None:
        self.reason, self.file, self.rba = reason, file, rba
        where = file or "<trail>"
        if rba is not None:
            where += f": RBA {rba}"
        super().__init__(f"{where}: {reason}")


class SourceError(MsgcapError):
    """A message source that cannot be reached or refuses us: ``url: reason``."""

    def __init__(self, reason: str, *, url: str | None = None) -> None:
        self.reason, self.url = reason, url
        super().__init__(f"{url}: {reason}" if url else reason)
