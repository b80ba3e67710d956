"""kb.parallel.Workers: forked workers sharing a task list with this process."""

from __future__ import annotations

import os

import pytest

from kb.errors import InternalError, NotFoundError
from kb.parallel import Workers, can_fork, cpu_workers

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

PARENT = os.getpid()


def square_with_pid(n: int) -> tuple[int, int]:
    # Uneven work, so that tasks finish out of order in the children.
    total = sum(range((n % 7) * 20_000))
    return n * n + 0 * total, os.getpid()


def _reaped(pids: list[int]) -> bool:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue  # already reaped: what Workers must have done
        return False
    return True


@pytest.mark.parametrize("workers", [2, 3])
def test_results_in_task_order_and_shared_with_the_children(workers):
    tasks = list(range(60))
    with Workers(square_with_pid, tasks, workers) as pool:
        pids = list(pool.pids)
        got = list(pool)
    assert [r for r, _ in got] == [n * n for n in tasks]
    by = {pid for _, pid in got}
    assert PARENT in by or len(by) == workers - 1  # this process may or may not compute one
    assert by - {PARENT} <= set(pids) and by - {PARENT}, "no task was computed by a child"
    assert len(pids) == workers - 1
    assert _reaped(pids)


def test_window_bounds_the_tasks_given_out():
    tasks = list(range(40))
    with Workers(square_with_pid, tasks, 2, window=5) as pool:
        seen = 0
        for _ in pool:
            seen += 1
            assert pool.next_given - pool.next_yield <= 5
    assert seen == 40


def test_ready_yields_only_what_came_back_in_order():
    tasks = list(range(12))
    with Workers(square_with_pid, tasks, 2) as pool:
        first = [r for r, _ in pool.ready()]  # nothing computed here
        rest = [r for r, _ in pool]
    assert first + rest == [n * n for n in tasks]


def fail_in_child(n: int) -> int:
    if os.getpid() != PARENT:
        raise NotFoundError(f"task {n}: no such card")
    return n


def test_an_exception_in_a_child_is_raised_here_with_its_type():
    # Task 0 is always handed to a child first.
    with pytest.raises(NotFoundError, match="task 0: no such card"):
        with Workers(fail_in_child, list(range(6)), 2) as pool:
            list(pool)


def fail_here(n: int) -> int:
    if n == 3:
        raise ValueError("three")
    return n


def test_an_exception_comes_in_its_task_turn():
    got = []
    with pytest.raises(ValueError, match="three"):
        with Workers(fail_here, list(range(8)), 2) as pool:
            for r in pool:
                got.append(r)
    assert got == [0, 1, 2]


def die_in_child(n: int) -> int:
    if os.getpid() != PARENT:
        os._exit(9)
    return n


def test_a_child_that_dies_is_an_internal_error():
    with pytest.raises(InternalError, match="forked worker"):
        with Workers(die_in_child, list(range(6)), 2) as pool:
            list(pool)


class Opaque:
    pass


def unmarshallable(n: int) -> object:
    return Opaque()


def test_a_result_marshal_cannot_write_is_an_error_not_a_hang():
    with pytest.raises(ValueError):
        with Workers(unmarshallable, list(range(4)), 2) as pool:
            list(pool)


def test_leaving_early_stops_and_reaps_the_children():
    with Workers(square_with_pid, list(range(200)), 3) as pool:
        pids = list(pool.pids)
        for i, _ in enumerate(pool):
            if i == 2:
                break
    assert _reaped(pids)


def nested(n: int) -> list[int]:
    return [n, n + 1]


def test_workers_opened_while_others_run_finish_and_free_their_children():
    outer_tasks = list(range(10))
    with Workers(square_with_pid, outer_tasks, 2) as outer:
        with Workers(nested, list(range(10)), 2) as inner:
            inner_got = list(inner)
        outer_got = [r for r, _ in outer]
        pids = list(outer.pids)
    assert inner_got == [[n, n + 1] for n in range(10)]
    assert outer_got == [n * n for n in outer_tasks]
    assert _reaped(pids)


def test_no_parallel_switch_and_worker_count(monkeypatch):
    assert 1 <= cpu_workers() <= 4
    assert cpu_workers(limit=1) == 1
    monkeypatch.setenv("KB_NO_PARALLEL", "1")
    assert not can_fork()
    with pytest.raises(ValueError):
        Workers(square_with_pid, [1], 1)


def big_result(n: int) -> bytes:
    return bytes([n % 256]) * 300_000  # more than a few of them fill any pipe


def test_meanwhile_reads_the_children_while_this_process_works():
    """A job run by `meanwhile` while the children return more than their pipe holds:
    the children are not held up by it (their records are read meanwhile), the job's
    value comes back, and the results are complete and in order afterwards."""
    tasks = list(range(12))
    with Workers(big_result, tasks, 2, window=len(tasks), hold=len(tasks)) as pool:
        def job() -> int:
            # Wait (bounded) until the child has returned every task it holds: possible
            # only when its records are read while this job runs.
            import time
            for _ in range(500):
                if not pool.held[0]:
                    return 7
                time.sleep(0.01)
            return -1
        assert pool.meanwhile(job) == 7
        got = list(pool)
    assert got == [big_result(n) for n in tasks]


def test_meanwhile_hands_the_children_their_next_tasks():
    """A child holding one task at a time is handed its next one as it returns one while
    `meanwhile`'s job runs: it can do every task before the job ends."""
    tasks = list(range(8))
    with Workers(square_with_pid, tasks, 2, window=len(tasks), hold=1) as pool:
        def job() -> int:
            import time
            for _ in range(500):  # bounded: 5 s
                if pool.next_given == len(tasks) and not pool.held[0]:
                    return 7
                time.sleep(0.01)
            return -1
        assert pool.meanwhile(job) == 7
        child = pool.pids[0]
        got = list(pool)
    assert got == [(n * n, child) for n in tasks]


def test_meanwhile_raises_what_the_job_raises():
    with Workers(square_with_pid, list(range(4)), 2) as pool:
        with pytest.raises(NotFoundError):
            pool.meanwhile(lambda: (_ for _ in ()).throw(NotFoundError("no such card")))
        assert [r for r, _ in pool] == [0, 1, 4, 9]


def test_concurrently_runs_the_calls_at_once_and_keeps_their_order():
    """Each call waits (bounded) for the next one to have started: possible only when
    they run at the same time. Results come back in call order; the first exception in
    call order is raised once every call has ended."""
    import threading

    from kb.parallel import concurrently

    started = [threading.Event() for _ in range(3)]

    def call(i: int):
        def run():
            started[i].set()
            assert started[(i + 1) % 3].wait(5), "the calls did not run at the same time"
            return i * 10
        return run

    assert concurrently(call(0), call(1), call(2)) == [0, 10, 20]
    ended: list[int] = []

    def fails(i: int, exc: BaseException):
        def run():
            ended.append(i)
            raise exc
        return run

    with pytest.raises(NotFoundError):
        concurrently(lambda: ended.append(0), fails(1, NotFoundError("first")),
                     fails(2, InternalError("second")))
    assert sorted(ended) == [0, 1, 2]
    assert concurrently() == []


def test_a_child_runs_what_is_registered_for_its_exit(tmp_path):
    """Children end with os._exit (no atexit handler); what at_child_exit registered runs
    in each before it does (kb.git stops a child's own `git cat-file` so), not here."""
    import kb.parallel

    log = tmp_path / "exits.txt"

    def note() -> None:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")

    kb.parallel.at_child_exit(note)
    kb.parallel.at_child_exit(note)  # once per function
    try:
        with Workers(square_with_pid, list(range(20)), 3, hold=1) as pool:
            pids = list(pool.pids)
            list(pool)
    finally:
        kb.parallel._AT_CHILD_EXIT.remove(note)
    exits = log.read_text(encoding="utf-8").split()
    assert sorted(map(int, exits)) == sorted(pids) and str(PARENT) not in exits
