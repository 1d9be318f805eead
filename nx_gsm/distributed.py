"""Counting and finding matches on a Dask cluster (``client=`` in the public API).

The search space is split by the root: the candidates of the first pattern node in matching order
(``plan.order[0]``) are dealt round-robin into tasks, and task ``i`` runs the plan with its root
restricted to its share (:func:`root_plan`). Every match has exactly one root image, so the shares
partition the matches and the total is the exact sum of the task results. Counts on engines that
start from partial matches (``capabilities.prefix_tasks``), and finds on those that run prefixes
in parallel (``prefix_finds``), split one level deeper, by the depth-2 partial matches
(:func:`split_prefixes`), so a hub root's subtree spreads over several tasks.

Failures cannot double count: a task's result is read only from its *finished* future, once per
task. A task that raised is re-run up to ``retries`` times (Dask's retries); a task whose worker
died is re-run by the scheduler elsewhere (up to its ``allowed-failures``); in both cases only the
run that finished is summed. With ``timeout``, the tasks finished by then are summed and the result
is a :class:`~nx_gsm.engines.base.PartialCount`.

Workers receive the plan (data graph included) once, as the result of a task they depend on, so a
worker lost with its copy has it recomputed. With GPUs, run one worker per GPU
(:func:`gpu_client`: dask-cuda's ``LocalCUDACluster``, or the same layout from ``distributed``
alone); ``engine="auto"`` then uses each worker's GPU engine, and ``engine="partitioned"``
partitions the graph on every worker.
"""

from __future__ import annotations

import os
import uuid

import numpy as np

from .engines.base import PartialCount
from .engines.registry import capabilities_of, resolve_engine
from .plan.planner import reorder
from .threads import launch

__all__ = ["count_plan", "find_plan", "root_plan", "split_roots", "split_prefixes",
           "count_share", "count_prefixes", "find_share", "find_prefixes", "gpu_client",
           "visible_gpus"]

# tasks per worker thread: small enough per task to balance skewed roots, few enough to keep
# the scheduler's per-task overhead (about a millisecond) negligible
TASKS_PER_THREAD = 4


def split_roots(plan, tasks):
    """The root candidates dealt round-robin into at most ``tasks`` non-empty int32 arrays.

    Examples
    --------
    >>> import networkx as nx
    >>> from nx_gsm.api import prepare
    >>> plan, _, _ = prepare(nx.complete_graph(5), nx.path_graph(3), "mono")
    >>> [s.tolist() for s in split_roots(plan, 2)]
    [[0, 2, 4], [1, 3]]
    """
    return _deal(plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]], tasks)


def _deal(items, tasks):
    """``items`` (rows of an array) dealt round-robin into at most ``tasks`` non-empty arrays."""
    tasks = max(1, min(int(tasks), items.shape[0]))
    return [np.ascontiguousarray(items[i::tasks]) for i in range(tasks) if items[i::tasks].size]


def split_prefixes(plan, tasks):
    """The depth-2 partial matches (root image, next image) dealt round-robin into at most
    ``tasks`` non-empty ``(n, 2)`` int32 arrays, or None for patterns of fewer than 3 nodes.

    Tasks on engines with prefix tasks use these rather than roots: on skewed graphs one hub root can
    hold most of the search (human dense_8_11 on two GPUs: 128 root shares ran 1.03x faster
    than one GPU), while its subtree spreads over its neighbours here. Every match has one such
    prefix, so the shares still partition the matches.
    """
    if plan.k < 3:
        return None
    from .engines.cpu import expand, plan_arrays

    roots = plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]].astype(np.int32)
    return _deal(launch(expand, plan_arrays(plan), np.ascontiguousarray(roots[:, None])), tasks)


def _by_prefixes(engine, finding):
    """Whether tasks split by depth-2 prefixes (:func:`split_prefixes`) rather than roots: the
    engine runs prefix tasks (:class:`~nx_gsm.engines.base.PrefixEngine`) and, for finds, runs
    a task's prefixes in parallel (the CPU engine walks them one after another, while its
    enumeration from roots is parallel). ``"auto"`` resolves on each worker, to the CPU engine
    or a GPU engine with prefix tasks, so its counts split by prefixes and its finds by roots."""
    if isinstance(engine, str):
        if engine == "auto":
            return not finding
        caps = capabilities_of(engine)
    else:
        caps = engine.capabilities
    return caps.prefix_finds if finding else caps.prefix_tasks


def _from_engine(engine):
    """The engine, which must run prefix tasks."""
    eng = resolve_engine(engine)
    if not eng.capabilities.prefix_tasks:
        raise ValueError(f"engine {eng.name!r} does not start from partial matches")
    return eng


def count_prefixes(plan, rows, engine="auto"):
    """One task: the number of matches below the partial matches ``rows`` (exact int)."""
    return int(_from_engine(engine).count_from(plan, rows))


def find_prefixes(plan, rows, engine="auto"):
    """One task: the matches below the partial matches ``rows``, rows in ``plan.order``."""
    chunks = list(_from_engine(engine).iter_from(plan, rows))
    return np.concatenate(chunks) if chunks else np.zeros((0, plan.k), dtype=np.int32)


def root_plan(plan, roots):
    """``plan`` with the first pattern node (``plan.order[0]``) restricted to data ids ``roots``."""
    cand = plan.cand.copy()
    u = int(plan.order[0])
    keep = np.zeros(cand.shape[1], dtype=bool)
    keep[roots] = True
    cand[u] &= keep
    return reorder(plan, plan.order, cand=cand)


def count_share(plan, roots, engine="auto"):
    """One task: the number of matches whose root image is in ``roots`` (exact int)."""
    return int(resolve_engine(engine).count(root_plan(plan, roots)))


def find_share(plan, roots, engine="auto"):
    """One task: the matches whose root image is in ``roots``, rows in ``plan.order``."""
    chunks = list(resolve_engine(engine).iter_chunks(root_plan(plan, roots)))
    return np.concatenate(chunks) if chunks else np.zeros((0, plan.k), dtype=np.int32)


def _plan_of(plan):
    return plan


def _submit(client, fn, plan, engine, tasks, retries):
    if tasks is None:
        tasks = TASKS_PER_THREAD * max(1, sum(client.nthreads().values()))
    shares = None
    if _by_prefixes(engine, finding=fn is not count_share):
        shares = split_prefixes(plan, tasks)
        if shares is not None:
            fn = {count_share: count_prefixes, find_share: find_prefixes}[fn]
    if shares is None:
        shares = split_roots(plan, tasks)
    token = uuid.uuid4().hex
    # a task, not a scatter: the scheduler can recompute it if every worker holding it dies
    plan_f = client.submit(_plan_of, plan, key=f"gsm-plan-{token}", retries=retries)
    keys = [f"gsm-{fn.__name__}-{token}-{i}" for i in range(len(shares))]
    return client.map(fn, [plan_f] * len(shares), shares, [engine] * len(shares), key=keys,
                      retries=retries)


def _finished(futures, timeout):
    """The futures that finished (all, or those done when ``timeout`` passed, the rest
    cancelled) and whether any was cut off. A failed task raises here, as ``gather`` would."""
    from distributed import wait

    try:
        wait(futures, timeout=timeout)
    except TimeoutError:
        pass
    done = [f for f in futures if f.status == "finished"]
    late = [f for f in futures if f.status == "pending"]
    for f in late:
        f.cancel()
    errors = [f for f in futures if f.status == "error"]
    if errors:
        errors[0].result()
    return done, bool(late)


def count_plan(plan, client, *, engine="auto", tasks=None, retries=2, timeout=None):
    """Count the matches of ``plan`` on the cluster behind ``client`` (a ``distributed.Client``).

    Parameters
    ----------
    plan : MatchPlan
    client : distributed.Client
    engine : str
        Engine name each task runs (``"auto"``, ``"cpu"``, ``"gmatch"``, ``"partitioned"``...).
    tasks : int, optional
        Number of root shares (default ``4 x`` the cluster's worker threads).
    retries : int
        Re-runs of a task that raised.
    timeout : float, optional
        Seconds; the tasks finished by then are summed into a PartialCount.

    Examples
    --------
    >>> import networkx as nx
    >>> from distributed import Client, LocalCluster
    >>> from nx_gsm.api import prepare
    >>> plan, _, _ = prepare(nx.complete_graph(6), nx.cycle_graph(4), "mono")
    >>> with LocalCluster(n_workers=1, processes=False) as c, Client(c) as client:  # doctest: +SKIP
    ...     count_plan(plan, client, engine="cpu")
    360
    """
    if plan.empty:
        return 0
    futures = _submit(client, count_share, plan, engine, tasks, retries)
    done, cut = _finished(futures, timeout)
    total = sum(int(c) for c in client.gather(done))
    return PartialCount(total) if cut else total


def find_plan(plan, client, *, engine="auto", tasks=None, retries=2, timeout=None):
    """All matches of ``plan`` from the cluster, as ``(rows, partial)``: an int32 array with one
    column per depth of ``plan.order``, and whether ``timeout`` cut it short. Parameters as
    :func:`count_plan`."""
    if plan.empty:
        return np.zeros((0, plan.k), dtype=np.int32), False
    futures = _submit(client, find_share, plan, engine, tasks, retries)
    done, cut = _finished(futures, timeout)
    parts = client.gather(done)
    rows = np.concatenate(parts) if parts else np.zeros((0, plan.k), dtype=np.int32)
    return rows, cut


def visible_gpus():
    """The GPU ids this process may use: ``CUDA_VISIBLE_DEVICES`` where set, else every device
    the CUDA runtime reports (none without CuPy or a driver)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and not d.strip().startswith("-")]
    try:
        import cupy

        return [str(i) for i in range(cupy.cuda.runtime.getDeviceCount())]
    except Exception:  # noqa: BLE001 - no CuPy or no driver: no GPUs
        return []


def gpu_client(n_gpus=None, threads_per_worker=1, **cluster_kwargs):
    """A ``distributed.Client`` with one worker process per visible GPU.

    With dask-cuda installed this is its ``LocalCUDACluster`` (``cluster_kwargs`` go to it).
    Without it, the same layout from ``distributed`` alone: a ``SpecCluster`` of one ``Nanny``
    per GPU whose worker sees only that GPU (``CUDA_VISIBLE_DEVICES`` set to its id, so every
    engine in it uses device 0 of its own view). ``n_gpus`` caps the number of workers.

    Examples
    --------
    >>> import nx_gsm
    >>> from nx_gsm.distributed import gpu_client
    >>> client = gpu_client()  # doctest: +SKIP
    >>> nx_gsm.count_subgraph_monomorphisms(G, H, client=client)  # doctest: +SKIP
    """
    from distributed import Client

    gpus = visible_gpus()
    if n_gpus is not None:
        gpus = gpus[: int(n_gpus)]
    if not gpus:
        raise RuntimeError("gpu_client: no visible GPU (CUDA_VISIBLE_DEVICES is empty or no "
                           "CUDA device was found); use distributed.LocalCluster for CPU workers")
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        return Client(_gpu_spec_cluster(gpus, threads_per_worker, **cluster_kwargs))
    return Client(LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(gpus),
                                   threads_per_worker=threads_per_worker, **cluster_kwargs))


def _gpu_spec_cluster(gpus, threads_per_worker, **kwargs):
    from distributed import Nanny, Scheduler, SpecCluster

    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
    workers = {
        f"gpu-{g}": {"cls": Nanny, "options": {
            "nthreads": threads_per_worker,
            # the worker's only GPU; Numba's threads for the CPU fallback share the host's cores
            "env": {"CUDA_VISIBLE_DEVICES": g,
                    "NUMBA_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // len(gpus)))},
        }}
        for g in gpus
    }
    return SpecCluster(workers=workers, scheduler=scheduler, **kwargs)
