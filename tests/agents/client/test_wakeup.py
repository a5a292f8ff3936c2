"""`agents.client.wakeup.Wakeup`, the flag the supervisor, the team and the watcher set from
their signal handlers: an Event's latch for every thread, and no deadlock however the signals
fall (a `threading.Event` set from the handler deadlocks in the same storm: its lock may be
held by the very thread the handler interrupts)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from agents.client.wakeup import Wakeup

ROOT = Path(__file__).resolve().parents[3]


def test_a_wait_times_out_unset_and_every_waiter_sees_the_set():
    wakeup = Wakeup()
    started = time.monotonic()
    assert wakeup.wait(0.2) is False
    assert time.monotonic() - started >= 0.19
    assert wakeup.wait(0) is False and not wakeup.is_set()

    woken: list[bool] = []
    waiters = [threading.Thread(target=lambda: woken.append(wakeup.wait(30))) for _ in range(3)]
    for waiter in waiters:
        waiter.start()
    time.sleep(0.1)
    wakeup.set()
    wakeup.set()  # twice is once
    for waiter in waiters:
        waiter.join(timeout=5)
    assert woken == [True, True, True]
    # Latched: a wait after the set returns at once, with or without a timeout.
    assert wakeup.wait() is True and wakeup.wait(0) is True and wakeup.is_set()


STORM = """
import faulthandler, os, signal, sys, time
from agents.client.wakeup import Wakeup
faulthandler.dump_traceback_later(20, exit=True)  # a deadlock says where, then exits 1
current = [Wakeup()]
handled = [0]
def handler(*_):
    handled[0] += 1
    current[0].set()
signal.signal(signal.SIGUSR1, handler)
parent = os.getpid()
sender = os.fork()
if sender == 0:  # signals as fast as they go, for 3 seconds
    end = time.monotonic() + 3
    while time.monotonic() < end:
        os.kill(parent, signal.SIGUSR1)
    os._exit(0)
woken = 0
deadline = time.monotonic() + 4
while time.monotonic() < deadline:
    if current[0].wait(0.0005):  # the main loop's sleep, as the watcher's and supervisor's
        woken += 1
        current[0] = Wakeup()
os.waitpid(sender, 0)
print(handled[0], woken)
"""


def test_sets_from_a_signal_handler_never_deadlock_the_thread_they_interrupt():
    done = subprocess.run(
        [sys.executable, "-c", STORM],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    handled, woken = map(int, done.stdout.split())
    assert handled > 100 and woken > 100, done.stdout
