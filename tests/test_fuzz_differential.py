"""Differential fuzz of every public result form against NetworkX's VF2 (issue 53).

Cases come from :mod:`conformance.fuzz`: odd node keys, attribute values that compare equal yet
differ, callables that tell them apart or raise, the four graph classes, mono and induced; each
case checks ``count`` and two rotating forms (iterator, find and its conversions, match_frames,
the matcher classes, dispatch through ``backend="gsm"``, IncrementalMatcher, the CPU and
partitioned engine objects). A failure names each differing case with its seed and a one-line
command that re-checks and prints it.
"""

import pytest

from conformance import fuzz

SEED = 53


def _run_and_report(n, start=0, seed=SEED):
    report = fuzz.run(seed=seed, n=n, start=start)
    print(fuzz.summary_line(report))
    assert not report["differences"], \
        fuzz.format_differences(report) + "\n" + fuzz.summary_line(report)
    return report


def test_short_fuzz_run_agrees_with_vf2():
    report = _run_and_report(360)
    # every form ran (the rotation is a function of the case index only)
    assert set(report["per_form"]) == set(fuzz.FORMS)
    assert min(report["per_form"].values()) >= 40


def test_cases_are_reproducible_from_seed_and_index():
    a, b = fuzz.make_case(SEED, 1234), fuzz.make_case(SEED, 1234)
    assert a.describe() == b.describe()
    assert fuzz.make_case(SEED, 1235).describe() != a.describe()
    assert fuzz.reproducer(SEED, 1234) == f"python -m conformance.fuzz --seed {SEED} --case 1234"


def test_the_harness_sees_a_wrong_answer():
    # a result that misses one of VF2's mappings, a repeated mapping, and an exception only
    # nx_gsm raises are differences; an exception of one family on both sides is not
    case = fuzz.make_case(SEED, 0)
    want = fuzz._vf2(case)
    assert fuzz._differ(want, want) is None
    wrong = want.copy()
    wrong[frozenset({("not", "VF2's")})] += 1
    assert fuzz._differ(want, wrong) is not None
    assert fuzz._differ(3, fuzz._Raised(KeyError("a"))) is not None
    assert fuzz._differ(fuzz._Raised(KeyError("a")), fuzz._Raised(IndexError("b"))) is None
    assert fuzz._differ(fuzz._Raised(KeyError("a")), fuzz._Raised(TypeError("b"))) is not None


def test_only_the_documented_divergence_is_set_apart():
    # nx_gsm alone raising what the fuzz's own callables raise (directly, or chained as the
    # cause) is the documented divergence; a plain KeyError, or a NetworkX helper raising on no
    # structurally possible pair, stays a difference
    case = fuzz.make_case(SEED, 0)
    pairs = lambda: ([], [])  # noqa: E731
    own = fuzz.FuzzCallableError("boom")
    chained = RuntimeError("wrapped")
    chained.__cause__ = own
    for exc in (own, chained):
        assert fuzz._documented_divergence(3, fuzz._Raised(exc), case, pairs) is not None
    assert fuzz._documented_divergence(3, fuzz._Raised(KeyError("a")), case, pairs) is None
    # VF2 raising too is not this rule's business (both-raise agreement is _differ's)
    assert fuzz._documented_divergence(fuzz._Raised(own), fuzz._Raised(own), case, pairs) is None
    # the fuzz's callables raise nothing but FuzzCallableError, with the original as cause
    with pytest.raises(fuzz.FuzzCallableError) as info:
        fuzz.nm_missing({}, {"a": 1})
    assert isinstance(info.value.__cause__, KeyError)


def test_helper_exception_on_a_structurally_possible_pair_is_documented():
    import networkx as nx
    import numpy as np

    # categorical_node_match on array values raises NumPy's ValueError under bool(); the
    # pattern node (degree 1) fits data nodes 0 and 1 of a path, not a lone node
    case = fuzz.make_case(SEED, 0)
    case.node_match, case.edge_match, case.mode = "categorical", "none", "mono"
    case.G = nx.Graph([(0, 1)])
    case.G.add_node(2)
    case.H = nx.Graph([("a", "b")])
    for X in (case.G, case.H):
        nx.set_node_attributes(X, {u: np.array([1, 2]) for u in X}, "a")
    got = fuzz._Raised(ValueError("The truth value of an array ... is ambiguous"))
    nodes, edges = fuzz._possible_pairs(case)
    assert len(nodes) == 4 and len(edges) == 2
    assert fuzz._documented_divergence(2, got, case, lambda: (nodes, edges)) is not None
    assert fuzz._documented_divergence(2, got, case, lambda: ([], [])) is None
    assert fuzz._documented_divergence(2, fuzz._Raised(TypeError("x")), case,
                                       lambda: (nodes, edges)) is None


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_long_fuzz_run_agrees_with_vf2(block):
    # 4 blocks of 5,000 cases (20,000 in all, none of them the short run's), each a separate
    # test so that a failure names its block
    _run_and_report(5000, start=10_000 + 5000 * block)
