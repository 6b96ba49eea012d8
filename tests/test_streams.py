"""Launches on streams, ``parallel<s>`` and ``parallel.async<s>`` (LANGUAGE.md §6.2,
§7.5.6, §14.2; Croqtile: tests/gpu/codegen/cute/multi_stream.co): what they compute, what
the race checker orders between them, and the front end's rules.
"""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm
from croqvm.lang.frontend import front_end

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

# The second kernel reads what the first wrote: a[i] = i, b[i] = a[63 - i] = 63 - i.
# ``ORDER`` is what comes between the two launches.
TWO_LAUNCHES = """
    __co__ void f(stream s0, stream s1, global s32 [64] a, global s32 [64] b) {
      parallel.async<s0> p by 2 : block, t by 32 : thread
        a.at(p * 32 + t) = p * 32 + t;
      ORDER
        b.at(q * 32 + t) = a.at(63 - q * 32 - t);
    }
"""
ORDERED = {
    "same stream": "parallel<s0> q by 2 : block, t by 32 : thread",
    "sync.global": "sync.global;\n  parallel<s1> q by 2 : block, t by 32 : thread",
    "default stream": "parallel q by 2 : block, t by 32 : thread",
}


def program(order: str):
    source = textwrap.dedent(TWO_LAUNCHES).lstrip("\n").replace("ORDER", order)
    return croqvm.compile(source, "streams.co")


@pytest.mark.parametrize("how", sorted(ORDERED))
def test_launches_on_streams_compute_in_program_order(how):
    a, b = np.zeros(64, np.int32), np.zeros(64, np.int32)
    engines.run(program(ORDERED[how]), "f", None, None, a, b, out=io.StringIO())
    np.testing.assert_array_equal(a, np.arange(64))
    np.testing.assert_array_equal(b, 63 - np.arange(64))


def _race(order: str):
    """The race report of the two launches ordered by ``order``, or None."""
    a, b = np.zeros(64, np.int32), np.zeros(64, np.int32)
    try:
        program(order).run("f", None, None, a, b, engine="python", check="race",
                           out=io.StringIO())
    except croqvm.KernelFault as e:
        return str(e)
    return None


@pytest.mark.parametrize("how", sorted(ORDERED))
def test_a_stream_orders_its_own_launches(how):
    if engines._active[-1] != "python":
        pytest.skip("race checking runs on the Python engine")
    assert _race(ORDERED[how]) is None


def test_launches_on_two_streams_race():
    """Block 0 of the second launch reads a[63] first, which block 1 of the first wrote."""
    if engines._active[-1] != "python":
        pytest.skip("race checking runs on the Python engine")
    report = _race("parallel<s1> q by 2 : block, t by 32 : thread")
    assert report.splitlines()[0] == (
        "streams.co:5:5: runtime error: data race on global 'a' element (63): read here, "
        "written at streams.co:3:5; the kernel launched at streams.co:2:3 runs on stream "
        "'s0', and neither 'sync.global' nor a synchronous launch on that stream comes "
        "between them.")


def test_waiting_for_another_stream_leaves_the_first_running():
    """``parallel<s1>`` waits for stream s1 only: the host's read after it still races
    with the launch on s0."""
    if engines._active[-1] != "python":
        pytest.skip("race checking runs on the Python engine")
    source = textwrap.dedent("""
        __co__ void f(stream s0, stream s1, global s32 [64] a, global s32 [64] b) {
          parallel.async<s0> p by 2 : block, t by 32 : thread
            a.at(p * 32 + t) = p;
          parallel<s1> q by 2 : block, t by 32 : thread
            b.at(q * 32 + t) = q;
          println(a.at(40));
        }
    """).lstrip("\n")
    with pytest.raises(croqvm.KernelFault) as info:
        croqvm.compile(source, "streams.co").run(
            "f", None, None, np.zeros(64, np.int32), np.zeros(64, np.int32),
            engine="python", check="race", out=io.StringIO())
    assert str(info.value).splitlines()[0].startswith(
        "streams.co:6:3: runtime error: data race on global 'a' element (40): read here, "
        "written at streams.co:3:5; the kernel launched at streams.co:2:3 runs on stream 's0'")


def _errors(source: str) -> list[str]:
    _, diags, _ = front_end(source, "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == "error"]


def test_the_stream_is_a_stream_parameter():
    assert _errors("__co__ void f(int n) {\n  parallel<n> p by 2 : block { }\n}") == [
        "2:3: 'n' is not a stream parameter."]


def test_only_a_kernel_runs_on_a_stream():
    assert _errors("__co__ void f(stream s) {\n  parallel p by 2 : block {\n"
                   "    parallel<s> t by 32 : thread { }\n  }\n}") == [
        "3:5: only a kernel, the outermost parallel-by, runs on a stream."]


def test_the_stream_is_closed_by_a_bracket():
    assert _errors("__co__ void f(stream s) {\n  parallel<s p by 2 : block { }\n}") == [
        "2:13: syntax error: expected '>' after the stream of 'parallel<s>'."]   # after 's'
