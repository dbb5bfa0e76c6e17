"""SIGTERM/SIGINT reach ``msgcap run``'s stop from a thread of their own (msgcap.stopsignals).

Each case runs in a child interpreter so that a hang (the defect guarded against) fails the
test by its timeout instead of hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent("""
    import os, signal, threading, time
    from msgcap.stopsignals import Relay, delivered_to_thread
""")


def child(body: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_signal_while_the_main_thread_holds_the_lock_stopping_needs_does_not_hang() -> None:
    # What a capture meets: the signal lands while the main thread is inside Event.wait's
    # ``with self._cond`` and stopping must set that Event; in the handler it waited for itself.
    done = child("""
        held = threading.Lock()
        stopped = threading.Event()
        def stop(name):
            with held:
                stopped.set()
                print("stopped by", name, flush=True)
        with delivered_to_thread(stop):
            with held:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.3)  # the interpreter runs its handler here, the lock held
            assert stopped.wait(10), "the signal never reached stop()"
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "stopped by SIGTERM\n"


def test_each_signal_is_delivered_and_the_previous_handlers_come_back() -> None:
    done = child("""
        calls = []
        mine = lambda signum, frame: calls.append("previous handler")
        signal.signal(signal.SIGTERM, mine)
        with delivered_to_thread(calls.append):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 10
            while len(calls) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.set_wakeup_fd(-1) == -1
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
        print(calls)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "['SIGINT', 'SIGTERM', 'previous handler']\n"


def test_a_signal_between_receivers_is_kept_for_the_next_one() -> None:
    # A standby that took over is recovering the trail: nobody stops it at that moment, and the
    # signal's default action would kill it (exit -15) instead of a clean stop once it captures.
    done = child("""
        relay, waits, captures = Relay(), [], []
        with delivered_to_thread(relay):
            relay.to(waits.append)
            relay.to(None)  # the takeover: the wait is over, the capture not yet built
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)
            relay.to(captures.append)
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 10
            while len(captures) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
        print(waits, captures)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[] ['SIGTERM', 'SIGINT', 'SIGTERM']\n"
