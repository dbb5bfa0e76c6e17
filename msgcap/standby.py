"""``msgcap run --standby``: a hot standby that waits for a live capture's locks, then takes over.

A capture holds two ``flock`` locks for its life (``msgcap.lock``: the checkpoint's, then the
trail's). A standby runs the same properties but, instead of refusing when they are held, asks
for them again every ``POLL_SECONDS`` (``LOCK_NB``, in the same order as every writer, so two
standbys never hold one lock each), holding no broker connection and touching no trail,
checkpoint or status file meanwhile. When the active capture dies (``kill -9``, a crash, or on
shared storage a lost machine whose lock lease ran out) the kernel or the NFS server frees its
locks, one standby gets them, and ``msgcap run`` goes on exactly as a restart does: recovery
from the checkpoint, connection, capture.

Polling rather than a blocking ``flock``: a signal must end the wait (``stopsignals`` delivers
it to a thread, which sets ``stop``), and on NFS a blocked lock request is retried by the client
itself with a back-off of up to 30 s, where a poll bounds the wait by ``POLL_SECONDS``.

While it waits, a standby registers itself in a small file beside the checkpoint's lock,
``<checkpoint.dir>/<EXTRACT>.standby.<host>.<pid>`` (JSON: pid, host, since, updated), for
``msgcap status``; it holds a ``flock`` on that file, so that a registration left by a standby
killed on this machine is told from a live one (``lock.holder``), and rewrites ``updated`` every
``REFRESH_SECONDS``, the only sign of life ``status`` has of a standby on another machine.
"""

from __future__ import annotations

import fcntl
import glob
import json
import logging
import os
import socket
import sys
import threading
import time
from contextlib import ExitStack
from datetime import datetime
from typing import Any

from msgcap.lock import Lock, holder
from msgcap.trail.julian import datetime_to_unix_us, unix_us_to_iso
from props.errors import MsgcapError

log = logging.getLogger("msgcap.run")

POLL_SECONDS = 0.1  # how often a standby asks for the locks: the bound of its lock wait
REFRESH_SECONDS = 10.0  # how often it rewrites its registration's "updated"
STALE_SECONDS = 3 * REFRESH_SECONDS  # a registration from another host older than this is gone


def _now_us() -> int:
    return time.time_ns() // 1000


def _prefix(checkpoint_dir: str, extract: str) -> str:
    return os.path.join(checkpoint_dir, f"{extract}.standby.")


class Registration:
    """This standby's file beside the lock, locked and kept up to date until ``remove``."""

    def __init__(self, checkpoint_dir: str, extract: str) -> None:
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.path = f"{_prefix(checkpoint_dir, extract)}{self.host}.{self.pid}"
        self.since_us = _now_us()
        self._refreshed = time.monotonic()
        self._fd: int | None = None
        # made under a name no sweep matches, locked, then renamed: a sweep never takes a
        # new registration for a stale one
        fresh = os.path.join(checkpoint_dir, f".{extract}.standby-new.{self.pid}")
        try:
            os.makedirs(checkpoint_dir, exist_ok=True)
            self._sweep()
            fd = os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise MsgcapError(f"{fresh}: cannot write the standby registration: "
                              f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._write(fd)
            os.rename(fresh, self.path)
        except OSError as exc:
            os.close(fd)
            raise MsgcapError(f"{self.path}: cannot write the standby registration: "
                              f"{exc.strerror or exc}") from None
        self._fd = fd

    def _write(self, fd: int) -> None:
        record = {"pid": self.pid, "host": self.host, "since": unix_us_to_iso(self.since_us),
                  "updated": unix_us_to_iso(_now_us())}
        data = json.dumps(record).encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))

    def refresh(self) -> None:
        """Rewrite ``updated`` when ``REFRESH_SECONDS`` passed (a write error is not fatal: the
        registration is for people, the locks are what count)."""
        if self._fd is None or time.monotonic() - self._refreshed < REFRESH_SECONDS:
            return
        self._refreshed = time.monotonic()
        try:
            self._write(self._fd)
        except OSError as exc:
            log.warning("%s: cannot write the standby registration: %s", self.path,
                        exc.strerror or exc)

    def remove(self) -> None:
        if self._fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError as exc:
            log.warning("%s: cannot remove the standby registration: %s", self.path,
                        exc.strerror or exc)
        os.close(self._fd)
        self._fd = None

    def _sweep(self) -> None:
        """Remove the registrations of standbys of this host that were killed (their flock is
        free): a standby that dies leaves its file behind."""
        prefix = self.path[:-len(str(self.pid))]  # <EXTRACT>.standby.<host>.
        for path in glob.glob(glob.escape(prefix) + "*"):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(path)
            except OSError:  # held: a live standby's
                pass
            finally:
                os.close(fd)


def take_over(locks: list[Lock], registration: Registration, stop: threading.Event,
              poll: float = POLL_SECONDS) -> ExitStack | None:
    """Wait for ``locks``, in order, until each is taken: the stack that releases them; None
    when ``stop`` was set first (every lock taken so far released)."""
    stack = ExitStack()
    started, waited, active = time.monotonic(), False, None
    try:
        for lock in locks:
            stack.push(lock)  # released with the stack, taken or not
            said: int | None = None
            while not lock.try_acquire():
                pid = lock.holder()
                if not waited or pid != said:
                    waited, said, active = True, pid, pid
                    say(f"standby (pid {os.getpid()}): {lock.path} is held by "
                        f"{f'process {pid}' if pid is not None else 'another process'} "
                        "(the active capture): waiting to take over")
                registration.refresh()
                if stop.wait(poll):
                    stack.close()
                    return None
    except BaseException:
        stack.close()
        raise
    if not waited:
        say(f"standby (pid {os.getpid()}): no capture is active: taking over at once")
    else:
        say(f"standby (pid {os.getpid()}): took over from "
            f"{f'process {active}' if active is not None else 'another process'} after "
            f"waiting {time.monotonic() - started:.3f} s: locks taken, recovering the trail")
    return stack


def say(line: str) -> None:
    """A standby's transitions go to the log and to stderr (a service manager's journal)."""
    log.info("%s", line)
    print(f"msgcap run: {line}", file=sys.stderr, flush=True)


def standbys(checkpoint_dir: str, extract: str, now_us: int | None = None) -> list[dict[str, Any]]:
    """The standbys waiting for this capture's locks (``msgcap status``): pid, host, since,
    updated; registrations of dead standbys (this host: their flock is free; another host: not
    refreshed for ``STALE_SECONDS``) and unreadable ones are left out."""
    now = _now_us() if now_us is None else now_us
    this_host = socket.gethostname()
    found = []
    for path in sorted(glob.glob(glob.escape(_prefix(checkpoint_dir, extract)) + "*")):
        try:
            with open(path, encoding="utf-8") as fh:
                record = json.load(fh)
            pid, host, since, updated = (record["pid"], record["host"], record["since"],
                                         record["updated"])
            updated_us = datetime_to_unix_us(datetime.fromisoformat(updated))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or not a registration
        if holder(path) is None and (host == this_host
                                     or (now - updated_us) / 1e6 > STALE_SECONDS):
            continue
        found.append({"pid": pid, "host": host, "since": since, "updated": updated})
    return found
