"""Forked workers sharing a list of tasks with this process (issue 18).

:class:`Workers` computes ``func(task)`` for every task of a list and yields the
results in task order. ``workers - 1`` children are forked, and this process is
the last worker: whenever the next result to yield has not come back, it
computes a task no child holds instead of waiting. A child holds a few task
indices at a time, handed to it through its own pipe (the tasks themselves
it inherited at the fork), and writes each result back as one ``marshal``
record through a pipe widened to 1 MiB, so that it seldom waits for this
process to read. At most ``window`` tasks are given out and not yet yielded,
which bounds the memory of results waiting for the caller.

Why not :mod:`multiprocessing`: importing its pool costs ~14 ms, its pickled
tasks and results go through handler threads, and its parent only waits. At
1,000 files that was all a second core saved; with these workers the cold index
of 1,000 files takes ~30 ms less (docs/DECISIONS.md).

Results must be what :mod:`marshal` writes (tuples, lists, dicts, sets, str,
bytes, int, float, bool, None). An exception raised in a child is raised again
here, in its task's turn (pickled; an :class:`~kb.errors.InternalError` when it
cannot be); a child that dies is an :class:`~kb.errors.InternalError`. Children
exit with ``os._exit``: no atexit handler, no flush of a buffer inherited from
this process. Only where ``os.fork`` exists; callers check :func:`can_fork`.
"""

from __future__ import annotations

import marshal
import os
import struct
from collections import deque
from typing import Any, Callable, Iterator, Sequence, TypeVar

from kb.errors import InternalError

__all__ = ["Workers", "at_child_exit", "can_fork", "concurrently", "cpu_workers"]

_TASK = struct.Struct("<q")  # a task index (the pipe's end asks the child to stop)
_HEAD = struct.Struct("<qBQ")  # task index, status (0 a result, 1 an exception), length
_OK, _RAISED = 0, 1
T = TypeVar("T")
#: The parent's ends of every running child's pipes (of all :class:`Workers` open in
#: this process): a child forked later closes them.
_PARENT_ENDS: set[int] = set()


#: What a forked child runs before it exits (:func:`at_child_exit`).
_AT_CHILD_EXIT: list[Callable[[], Any]] = []


def at_child_exit(func: Callable[[], Any]) -> None:
    """Run ``func()`` in every forked worker before it exits (children end with
    ``os._exit``, which runs no ``atexit`` handler): e.g. stop the processes the
    child started, which would outlive it. Registered once per function."""
    if func not in _AT_CHILD_EXIT:
        _AT_CHILD_EXIT.append(func)


def can_fork() -> bool:
    """Whether workers can be forked here (``os.fork`` exists and ``KB_NO_PARALLEL``
    is unset: tests and profiles run everything in one process with it)."""
    return hasattr(os, "fork") and not os.environ.get("KB_NO_PARALLEL")


def cpu_workers(limit: int = 4) -> int:
    """The number of workers to use: the cores this process may run on, at most ``limit``."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, limit))


def concurrently(*calls: Callable[[], Any]) -> list[Any]:
    """The results of ``calls``, in order, each run in a thread of its own but the
    first (run in this one), all at once: for calls that mostly wait on a process (a
    few ``git`` listings a command needs before it can start), whose waits then
    overlap. Raises the first exception in call order, once every call has ended."""
    import threading

    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except BaseException as e:  # raised below, in this thread, in call order
            errors[i] = e

    threads = [threading.Thread(target=run, args=(i,), name=f"kb-call-{i}", daemon=True)
               for i in range(1, len(calls))]
    for t in threads:
        t.start()
    if calls:
        run(0)
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e
    return results


class Workers:
    """``func(task)`` for each of ``tasks``, in task order, by ``workers`` processes
    (this one included). Use as a context manager; iterate it for the results.

    ``window`` (default ``4 * workers``) bounds the tasks given out and not yet
    yielded; ``hold`` the tasks a child holds at once (its next ones are there
    when it ends one; a caller busy with other work before iterating gives the
    children more). :meth:`ready` yields the results already back, in order,
    without waiting or computing (for a caller interleaving other work).

    Raises what ``func`` raised in a child, or :class:`~kb.errors.InternalError`
    when a child dies or its exception cannot be sent back.
    """

    def __init__(self, func: Callable[[Any], Any], tasks: Sequence[Any], workers: int,
                 window: int | None = None, hold: int = 3) -> None:
        if workers < 2:
            raise ValueError("Workers needs at least 2 workers (this process and a child)")
        self.func, self.tasks = func, tasks
        self.children = min(workers - 1, len(tasks))
        self.hold = max(1, hold)
        self.window = max(window or 4 * workers, self.hold * self.children + 1)
        self.next_given = 0  # the first task not given out (to a child or computed here)
        self.next_yield = 0
        self.done: dict[int, tuple[int, Any]] = {}  # index -> (status, payload or (result,))
        self.held: list[deque[int]] = []  # per child: the indices it holds, in order
        self.owner: dict[int, int] = {}  # index given to a child -> child
        self.pids: list[int] = []
        self.task_w: list[int] = []
        self.results: list[Any] = []  # per child: its result pipe (read unbuffered)
        self.poll: Any = None

    # -- setup and teardown ------------------------------------------------------

    def __enter__(self) -> "Workers":
        import select

        try:
            for _ in range(self.children):
                task_r, task_w = os.pipe()
                result_r, result_w = os.pipe()
                _widen(result_w)
                _PARENT_ENDS.update((task_w, result_r))
                pid = os.fork()
                if pid == 0:  # the child: never returns
                    _child(self.func, self.tasks, task_r, result_w)
                os.close(task_r)
                os.close(result_w)
                self.pids.append(pid)
                self.task_w.append(task_w)
                # Unbuffered: a buffered reader would read ahead a record that poll()
                # then no longer sees in the pipe.
                self.results.append(os.fdopen(result_r, "rb", buffering=0))
                self.held.append(deque())
            self.poll = select.poll()
            for f in self.results:
                self.poll.register(f.fileno(), select.POLLIN)
            self._give()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for w in self.task_w:
            _PARENT_ENDS.discard(w)
            try:
                os.close(w)  # end of tasks: the child exits on it
            except OSError:
                pass
        self.task_w = []
        if self.next_yield < len(self.tasks):  # left early: do not wait for unwanted work
            import signal

            for pid in self.pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for pid in self.pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.pids = []
        for f in self.results:
            _PARENT_ENDS.discard(f.fileno())
            f.close()
        self.results = []

    # -- the children's side -------------------------------------------------------

    def _give(self) -> None:
        """Hand each child the next tasks, up to ``hold`` each, within the window."""
        for c, held in enumerate(self.held):
            while (len(held) < self.hold and self.next_given < len(self.tasks)
                   and self.next_given - self.next_yield < self.window):
                i = self.next_given
                try:
                    os.write(self.task_w[c], _TASK.pack(i))  # 8 bytes: never a partial write
                except OSError:
                    break  # it died; reading its pipe says so
                held.append(i)
                self.owner[i] = c
                self.next_given += 1

    def meanwhile(self, job: Callable[[], T]) -> T:
        """``job()``, run by this process while the children work; a thread reads their
        records as they come meanwhile (kept, not decoded), so that a child with more
        results than its pipe holds does not wait for ``job`` to end, and hands each
        child its next tasks (within the window) as it returns one: the tasks
        no child holds when ``job`` ends are left to this process. ``job`` must not
        use these workers. Raises what ``job`` raises, else what reading raised (a
        child that died)."""
        import select
        import threading

        wake_r, wake_w = os.pipe()
        self.poll.register(wake_r, select.POLLIN)
        failed: list[BaseException] = []

        def read() -> None:
            try:  # the only thread using this pool's state until job() returns
                while self._collect(wait=True, wake=wake_r):
                    self._give()
            except BaseException as e:  # raised in this process's thread, after job()
                failed.append(e)

        reader = threading.Thread(target=read, name="kb-workers-reader", daemon=True)
        reader.start()
        try:
            out = job()
        finally:
            os.write(wake_w, b"x")
            reader.join()
            self.poll.unregister(wake_r)
            os.close(wake_r)
            os.close(wake_w)
        if failed:
            raise failed[0]
        return out

    def _collect(self, wait: bool, wake: int | None = None) -> bool:
        """Read the records the children have written (``wait``: block until one comes,
        or until ``wake`` is readable: then return False)."""
        for fd, _ in self.poll.poll(None if wait else 0):
            if fd == wake:
                return False
            c = next(c for c, f in enumerate(self.results) if f.fileno() == fd)
            pipe = self.results[c]
            head = _read_exactly(pipe, _HEAD.size)
            if head is None:
                if self.held[c]:
                    raise InternalError(f"a forked worker (pid {self.pids[c]}) stopped before "
                                        f"returning task {self.held[c][0]}")
                self.poll.unregister(fd)
                continue
            index, status, size = _HEAD.unpack(head)
            payload = _read_exactly(pipe, size)
            if payload is None:
                raise InternalError(f"a forked worker (pid {self.pids[c]}) stopped while "
                                    f"returning task {index}")
            self.held[c].remove(index)
            self.done[index] = (status, payload)
        return True

    # -- results -----------------------------------------------------------------

    def _result(self) -> Any:
        status, value = self.done.pop(self.next_yield)
        self.owner.pop(self.next_yield, None)
        self.next_yield += 1
        self._give()
        if status == _OK:
            return value[0] if isinstance(value, tuple) else marshal.loads(value)
        raise _exception(value)

    def ready(self) -> Iterator[Any]:
        """The results already back, in task order, without waiting."""
        while True:
            self._collect(wait=False)
            if self.next_yield not in self.done:
                return
            yield self._result()

    def __iter__(self) -> Iterator[Any]:
        n = len(self.tasks)
        while self.next_yield < n:
            self._collect(wait=False)
            if self.next_yield in self.done:
                yield self._result()
                continue
            if self.next_yield not in self.owner or (
                    self.next_given < n and self.next_given - self.next_yield < self.window):
                # Nothing to yield yet: compute a task no child holds (the next one to
                # yield, when none holds it) rather than wait.
                i = self.next_yield if self.next_yield not in self.owner else self.next_given
                if i == self.next_given:
                    self.next_given += 1
                try:
                    self.done[i] = (_OK, (self.func(self.tasks[i]),))
                except Exception as e:  # raised in order, as a child's would be
                    self.done[i] = (_RAISED, e)
                self._give()
                continue
            self._collect(wait=True)


def _widen(fd: int) -> None:
    """Give the pipe ``fd`` the largest buffer an unprivileged process may (1 MiB on
    Linux): a child then writes its records without waiting for this process to
    read them. Where that is not possible, the default buffer only slows it."""
    try:
        import fcntl

        size = getattr(fcntl, "F_SETPIPE_SZ", None)
        if size is not None:
            fcntl.fcntl(fd, size, 1 << 20)
    except OSError:
        pass


def _exception(value: Any) -> BaseException:
    if isinstance(value, BaseException):
        return value
    import pickle

    try:
        exc = pickle.loads(value)
    except Exception:
        return InternalError("a forked worker raised an exception that could not be sent back")
    return exc if isinstance(exc, BaseException) else InternalError(str(exc))


def _child(func: Callable[[Any], Any], tasks: Sequence[Any], task_r: int, result_w: int) -> None:
    """A forked child: compute the tasks whose indices arrive on ``task_r`` until the
    pipe closes, each result one record on ``result_w``; then ``os._exit``."""
    code = 0
    try:
        import gc

        gc.disable()  # short-lived: reference counting frees what it builds
        for fd in _PARENT_ENDS:  # every child's pipes, as the parent holds them: a
            try:  # child must see the end of its tasks when the parent closes them
                os.close(fd)
            except OSError:
                pass
        with os.fdopen(task_r, "rb", buffering=0) as inp, os.fdopen(result_w, "wb") as out:
            while True:
                raw = _read_exactly(inp, _TASK.size)
                if raw is None:
                    break
                (i,) = _TASK.unpack(raw)
                try:
                    payload, status = marshal.dumps(func(tasks[i])), _OK
                except Exception as e:
                    payload, status = _pickled(e), _RAISED
                out.write(_HEAD.pack(i, status, len(payload)))
                out.write(payload)
                out.flush()
    except BaseException:
        code = 1
    finally:
        for func in _AT_CHILD_EXIT:
            try:
                func()
            except BaseException:
                pass
        os._exit(code)


def _read_exactly(f: Any, n: int) -> bytearray | None:
    """``n`` bytes from the unbuffered file ``f`` (a pipe gives them in pieces), or None
    at its end before them."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            return None
        got += k
    return buf


def _pickled(e: Exception) -> bytes:
    import pickle

    try:
        return pickle.dumps(e)
    except Exception:
        return pickle.dumps(f"a forked worker raised {type(e).__name__}: {e}")
