"""The executor (``perfcmp.base.procs``): a job run beside this process hands back its value or
its error, its death is one ``WorkerDied`` naming the cause, a child that stays takes a further
job, and a unit map keeps the units' order whoever runs them."""

from __future__ import annotations

import errno
import os
import signal
import time

import pytest

from perfcmp.base import procs
from perfcmp.base.errors import InputError
from perfcmp.base.procs import Beside, WorkerDied, map_units


def _square(x: int) -> int:
    return x * x


def _missing_input():
    raise InputError("no such file", "a.json")


def test_the_value_comes_back_and_the_child_is_gone():
    parent = os.getpid()
    with Beside(lambda: {"rows": [1, 2.5, "x"], "pid": os.getpid()}) as child:
        pid = child.pid
        value = child.result()
    assert value["rows"] == [1, 2.5, "x"] and value["pid"] == pid != parent
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_the_childs_error_is_raised_here_as_its_own():
    with Beside(_missing_input) as child:
        with pytest.raises(InputError) as info:
            child.result()
    assert info.value.path == "a.json" and info.value.message == "no such file"
    with Beside(lambda: 1 / 0) as child:
        assert child.result_or(lambda: "computed here") == "computed here"


def test_a_killed_child_is_one_line_naming_the_signal():
    with Beside(lambda: os.kill(os.getpid(), signal.SIGKILL), "the read worker") as child:
        with pytest.raises(WorkerDied) as info:
            child.result()
    assert str(info.value).startswith("the read worker died (killed by SIGKILL")
    assert str(info.value).endswith("; nothing was written")
    with Beside(lambda: os._exit(3), "the sheet builder") as child:
        with pytest.raises(WorkerDied, match=r"^the sheet builder died \(it exited with code 3\)"):
            child.result()


def test_an_input_changed_while_read_is_the_cause_of_the_death(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_bytes(b"0123456789")

    def grow_and_die():
        with open(trace, "ab") as handle:
            handle.write(b"more")
        os.kill(os.getpid(), signal.SIGKILL)

    with Beside(grow_and_die, "the read worker", [str(trace)]) as child:
        with pytest.raises(WorkerDied) as info:
            child.result()
    assert str(info.value) == (f"the read worker died ({trace}: the input changed while it was read (its size went "
                               "from 10 to 14 bytes)); nothing was written")


def test_a_child_that_stays_takes_a_further_job_in_the_same_process():
    with Beside(os.getpid, stay=True) as child:
        first = child.result()
        second = child.then(_square, 12)
        assert second is child and child.result() == 144
        assert child.then(os.getpid).result() == first != os.getpid()


def test_no_room_for_the_file_sends_the_value_through_the_pipe(monkeypatch):
    def full(value, file):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(procs, "_into_file", full)  # the fork inherits it
    big = list(range(300_000))  # more than a pipe's buffer: read here as it is written there
    with Beside(lambda: big, stay=True) as child:
        assert child.result() == big
        assert child.then(_square, 3).result() == 9


def test_without_a_fork_the_job_runs_here_when_asked(monkeypatch):
    ran = []
    child = Beside(lambda: ran.append(os.getpid()) or "here", fork=False)
    assert not child.forked and ran == []
    assert child.result() == "here" and ran == [os.getpid()]

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    with Beside(os.getpid, stay=True) as child:
        assert not child.forked and child.result() == os.getpid()
        assert child.then(_square, 5).result() == 25


def test_a_cancelled_child_is_killed_at_once():
    child = Beside(lambda: time.sleep(60))
    pid = child.pid
    start = time.monotonic()
    child.cancel()
    assert time.monotonic() - start < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_failing_block_kills_its_child():
    with pytest.raises(KeyError):
        with Beside(lambda: time.sleep(60)) as child:
            pid = child.pid
            raise KeyError("the parent failed")
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_units_come_back_in_their_order_on_any_number_of_workers():
    units = [7, 1, 5, 3, 2]
    assert map_units(_square, units, jobs=1) == [49, 1, 25, 9, 4]
    assert map_units(_square, units, jobs=3) == [49, 1, 25, 9, 4]


def _killed(unit):
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_dead_unit_worker_is_one_line():
    with pytest.raises(WorkerDied) as info:
        map_units(_killed, [1, 2, 3], jobs=2, what="a rank's read worker")
    assert str(info.value).startswith("a rank's read worker died (killed by SIGKILL")


def _slow_first(unit: int) -> tuple[int, int]:
    time.sleep(0.5 if unit == 0 else 0)  # the first unit ends last: the others pass it
    return unit, os.getpid()


def test_the_order_is_the_units_whichever_worker_finishes_first():
    done = map_units(_slow_first, list(range(6)), jobs=2)
    assert [unit for unit, _ in done] == list(range(6))
    assert len({pid for _, pid in done}) == 2 and os.getpid() not in {pid for _, pid in done}


def _fails_on_three(unit: int) -> int:
    if unit == 3:
        raise ValueError("unit 3 is malformed")
    return unit


def test_an_error_in_a_units_work_is_raised_as_its_own(monkeypatch):
    with pytest.raises(ValueError, match="unit 3 is malformed"):
        map_units(_fails_on_three, [1, 2, 3, 4], jobs=2)

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)  # no process to be had: every unit here
    assert map_units(_square, [1, 2, 3, 4], jobs=2) == [1, 4, 9, 16]
