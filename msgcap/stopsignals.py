"""SIGTERM/SIGINT delivered to a thread of their own, so that stopping may take locks.

A Python signal handler runs in the main thread between two bytecodes, possibly while that
thread holds the very lock the handler needs: ``Event.set()`` from a handler that interrupted
``Event.wait()`` inside its ``with self._cond`` waits for itself for ever, and a ``kill`` then
hangs the capture. Here the handler does nothing; ``signal.set_wakeup_fd`` makes the
interpreter write the signal's number to a pipe (async-signal-safe, no lock), and a daemon
thread reading the pipe calls ``on_signal`` with the signal's name.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def delivered_to_thread(on_signal: Callable[[str], None],
                        signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> Iterator[None]:
    """While inside, each of ``signals`` calls ``on_signal(name)`` from a thread of its own;
    the previous handlers and wake-up fd come back on the way out. Main thread only."""
    read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    os.set_blocking(read_end, True)
    watched = {int(sig) for sig in signals}

    def deliver() -> None:
        while True:
            try:
                received = os.read(read_end, 64)
            except InterruptedError:
                continue
            if not received:
                return  # the write end closed: the block is left
            for number in received:
                if number in watched:
                    on_signal(signal.Signals(number).name)

    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous = {sig: signal.signal(sig, lambda _signum, _frame: None) for sig in signals}
    thread = threading.Thread(target=deliver, name="msgcap-signals", daemon=True)
    thread.start()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_end)
        thread.join()
        os.close(read_end)


class Relay:
    """The one ``on_signal`` of a whole run, handing each signal to whoever stops the run at the
    moment: a standby's wait, then the capture. A signal that comes while nobody does (a
    standby's takeover, the trail's recovery) is kept and handed to the next receiver, so a run
    stops cleanly from its locks on instead of dying by the signal's default action."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._receiver: Callable[[str], None] | None = None
        self._kept: list[str] = []

    def __call__(self, name: str) -> None:
        with self._lock:
            if self._receiver is None:
                self._kept.append(name)
            else:
                self._receiver(name)

    def to(self, receiver: Callable[[str], None] | None) -> None:
        """From now on signals go to ``receiver`` (None: kept), first those kept meanwhile."""
        with self._lock:
            self._receiver = receiver
            if receiver is not None:
                kept, self._kept = self._kept, []
                for name in kept:
                    receiver(name)
