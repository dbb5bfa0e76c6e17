"""Events a peer can make happen many times a second (a broker that drops every connection, a
local client that opens connection after connection) are logged once per interval with a count,
not once each: a line per event would flood the log and hide everything else in it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

TALLY_SECONDS = 60.0


class Tally:
    """Counts one kind of event and says when to log it: the first at once, then at most once
    per ``interval`` with the number that happened since the last line."""

    def __init__(self, interval: float = TALLY_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval, self._clock = interval, clock
        self._pending = 0
        self._said: float | None = None
        self.span = 0.0  # seconds the count of the last ``add`` that returned one covers

    def add(self) -> int:
        """Count one event: how many to log now (1 for the first of a series, then all since
        the last line once ``interval`` has passed), 0 while the line would come too soon."""
        now = self._clock()
        self._pending += 1
        if self._said is not None and now - self._said < self.interval:
            return 0
        count, self._pending = self._pending, 0
        self.span = 0.0 if self._said is None else now - self._said
        self._said = now
        return count

    def reset(self) -> int:
        """The series is over (the next event logs at once); the events not logged yet."""
        pending, self._pending, self._said = self._pending, 0, None
        return pending
