"""Worker subprocesses: every tool runs in its own process, so any query can be stopped.

Why a process per tool: VF2 iterators, LAD, and Numba or CUDA kernels cannot be interrupted from
Python once inside native code, and a Python-level clock check between yielded matches cannot end a
long gap between two matches. The parent therefore waits ``timeout + grace`` seconds for each answer
and otherwise kills the worker (the query is recorded as a timeout) and starts a fresh one, which
reloads the data graph (and re-warms an engine) before the next query. Tools that can see the clock
also stop themselves at the deadline, which saves that restart.

Protocol over a ``multiprocessing`` pipe (``spawn`` context: no inherited threads or CUDA state):

- parent -> worker ``("load", G, label)``; reply ``("ready", info)``, ``("unavailable", reason)``
  or ``("error", message)``;
- parent -> worker ``("count", H, limit, induced, timeout, repeat)``; reply
  ``("ok", seconds, count, all_seconds)``, ``("timeout", seconds, None, [])``,
  ``("unsupported", reason)`` or ``("error", message)``;
- parent -> worker ``("stop",)``.

Timing: ``time.perf_counter()`` around ``Tool.count`` only, after ``Tool.prepare(H)`` and a
``gc.collect()``, with the garbage collector disabled during the call (as ``timeit`` does). Every
object alive once a tool is loaded and warm (its imports, Numba's compiler state, the data graph:
~1.3 x 10^5 for the CPU engine on yeast) is frozen (``gc.freeze()``), so that this collection
walks only what later queries left: walking them all evicts the CPU caches and made the next
light query 1.5-2x slower (0.7-0.9 ms against 0.3-0.5 ms on yeast), a cost the C++ peers, whose
clocks start right after their own load, never see.
Fast queries are repeated (``repeat``, at most; only while the runs so far total under
``REPEAT_BUDGET`` seconds) and the minimum is reported, as ``timeit`` advises: millisecond-scale
times on a shared machine are otherwise dominated by noise. Every repeat must give the same count.
Peers' workers get an address-space limit (``RLIMIT_AS``, ``--mem-limit-gb``) so that a tool
materialising millions of embeddings (igraph LAD) fails alone instead of exhausting the machine;
engine workers get none (CUDA reserves a large address space).
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import time
import traceback

from .tools import ToolTimeout, Unavailable, resolve_tool

__all__ = ["WorkerHandle", "worker_main", "REPEAT_BUDGET"]

REPEAT_BUDGET = 1.0  # seconds: repeat a query only while its runs so far total less than this


def _short(exc):
    return f"{type(exc).__name__}: {exc}"[:500]


def worker_main(conn, spec, mem_limit_bytes):
    """Entry point of a worker process (runs until ``("stop",)`` or a closed pipe)."""
    if mem_limit_bytes:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (mem_limit_bytes, mem_limit_bytes))
        except (ImportError, ValueError, OSError):
            pass
    try:
        tool = resolve_tool(spec)
    except Exception as exc:
        _reply_load_error(conn, exc)
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        op = msg[0]
        if op == "stop":
            return
        if op == "load":
            _, G, label = msg
            try:
                tool.check()
                gc.unfreeze()  # the previous load's objects may go
                t0 = time.perf_counter()
                tool.load(G, label)
                info = {"load_seconds": time.perf_counter() - t0}
                info.update(tool.warmup() or {})
                info["tool"] = tool.info()
                gc.collect()
                gc.freeze()
                conn.send(("ready", info))
            except Exception as exc:
                _reply_load_error(conn, exc)
            continue
        if op == "count":
            _, H, limit, induced, timeout, repeat = msg
            conn.send(_count(tool, H, limit, induced, timeout, repeat))
            continue
        conn.send(("error", f"unknown request {op!r}"))


def _reply_load_error(conn, exc):
    if isinstance(exc, Unavailable):
        conn.send(("unavailable", str(exc)))
    elif isinstance(exc, ImportError):
        conn.send(("unavailable", _short(exc)))
    else:
        conn.send(("error", _short(exc) + "\n" + traceback.format_exc(limit=3)[-1500:]))


def _count(tool, H, limit, induced, timeout, repeat=1):
    if induced and not tool.supports_induced:
        return ("unsupported", f"{tool.name} counts non-induced embeddings only")
    try:
        q = tool.prepare(H)
    except Exception as exc:
        return ("error", "prepare: " + _short(exc))
    times = []
    first = None
    while True:
        res = _timed(tool, q, limit, induced, timeout)
        if res[0] != "ok":
            return res if not times else ("error", f"repeat {len(times) + 1}: {res[1]}")
        _, dt, n = res
        if first is None:
            first = n
        elif n != first:
            return ("error", f"count changed between repeats: {first} then {n}")
        times.append(dt)
        if len(times) >= repeat or sum(times) >= REPEAT_BUDGET:
            return ("ok", min(times), first, times)


def _timed(tool, q, limit, induced, timeout):
    """One timed call: ``("ok", seconds, count)``, ``("timeout", seconds, None, [])`` or error."""
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    try:
        n = tool.count(q, limit=limit, induced=induced, deadline=t0 + timeout)
        dt = time.perf_counter() - t0
        if isinstance(n, tuple):  # a tool timing itself (Tool.count)
            n, dt = n
    except ToolTimeout:
        return ("timeout", time.perf_counter() - t0, None, [])
    except MemoryError:
        return ("error", "out of memory (see --mem-limit-gb)")
    except Exception as exc:
        return ("error", _short(exc))
    finally:
        gc.enable()
    if dt > timeout:
        return ("timeout", dt, None, [])
    return ("ok", dt, int(n))


class WorkerHandle:
    """Parent side of one tool's worker: start (load + warm-up), count with a hard timeout."""

    def __init__(self, tool, *, mem_limit_bytes=None, load_timeout=900.0):
        self.tool = tool
        self.spec = getattr(tool, "_spec", tool.name)
        self.mem_limit = mem_limit_bytes if tool.kind == "peer" else None
        self.load_timeout = load_timeout
        self.proc = None
        self.conn = None
        self.G = None
        self.label = None
        self.restarts = 0
        self.loads = []  # info dict of every (re)start: load_seconds, warm-up times

    # -- lifecycle --------------------------------------------------------------------------
    def start(self, G, label):
        """Start the worker and load ``G``. Returns ``("ready", info)`` / ``("unavailable", r)``
        / ``("error", msg)``."""
        self.G, self.label = G, label
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, self.spec, self.mem_limit),
                                daemon=True, name=f"bench-{self.tool.name}")
        self.proc.start()
        child.close()
        try:
            self.conn.send(("load", G, label))
            if not self.conn.poll(self.load_timeout):
                self.kill()
                return ("error", f"loading the data graph took over {self.load_timeout:.0f} s")
            reply = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            code = self._reap()
            return ("error", f"worker died while loading (exit code {code})")
        if reply[0] == "ready":
            self.loads.append(reply[1])
        else:
            self.stop()
        return reply

    def _reap(self):
        if self.proc is None:
            return None
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        code = self.proc.exitcode
        self.proc = None
        return code

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def stop(self):
        if self.proc is not None and self.conn is not None:
            try:
                self.conn.send(("stop",))
            except (OSError, BrokenPipeError):
                pass
            self.proc.join(10)
        self.kill()

    # -- queries ----------------------------------------------------------------------------
    def count(self, H, *, limit, induced, timeout, repeat=1, grace=None):
        """Run one query. Returns a dict with status, seconds (the minimum over repeats),
        seconds_all, count and error/note."""
        if self.proc is None:
            self.restarts += 1
            reply = self.start(self.G, self.label)
            if reply[0] != "ready":
                return {"status": "error", "seconds": None, "count": None,
                        "error": f"restart failed: {reply[1]}"}
        if grace is None:
            grace = max(2.0, 0.1 * timeout) + (REPEAT_BUDGET if repeat > 1 else 0.0)
        try:
            self.conn.send(("count", H, limit, induced, timeout, repeat))
            if not self.conn.poll(timeout + grace):
                self.kill()
                return {"status": "timeout", "seconds": None, "count": None,
                        "note": "worker killed at the timeout"}
            reply = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            code = self._reap()
            self.kill()
            return {"status": "error", "seconds": None, "count": None,
                    "error": f"worker died (exit code {code}; out of memory or a crash)"}
        status = reply[0]
        if status in ("ok", "timeout"):
            return {"status": status, "seconds": reply[1], "count": reply[2],
                    "seconds_all": reply[3]}
        if status == "unsupported":
            return {"status": "unsupported", "seconds": None, "count": None, "note": reply[1]}
        return {"status": "error", "seconds": None, "count": None, "error": reply[1]}
