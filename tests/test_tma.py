"""TMA copies and swizzled shared layouts (LANGUAGE.md §9.7): the forms and their static
errors, where a swizzle places a tile's bytes (computed here from the 16-byte-chunk
picture of the swizzle, not from croqvm's formula), stores and MMA reads through the
right and a wrong swizzle, futures of TMA copies, the race checker on an in-flight TMA
load. Execution tests run on each engine."""
import io

import numpy as np
import pytest

import croqvm
import engines
from croqvm.bytecode.module import L2Hint
from croqvm.bytecode.disasm import disassemble
from croqvm.bytecode.verify import verify
from croqvm.cuda.emit import emit
from croqvm.core.errors import BytecodeError, CompileError, KernelFault
from croqvm.lang.frontend import front_end


def diagnose(body: str, severity="error") -> list[str]:
    text = ("__co__ void f(global s32 [8, 32] g, global s32 [8, 32] h) {\n" + body + "\n}")
    _, diags, _ = front_end(text, "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == severity]


def block(stmt: str) -> str:
    return "parallel p by 1 : block {\n  " + stmt + "\n}"


ERRORS = [
    (block("x = dma.load g => shared;"), ["3:10: '.load' is a TMA-only operation."]),
    (block("x = tma.copy.evict_first g => shared;"),
     ["3:16: TMA L2 eviction modifiers are only valid on 'tma.load'."]),
    (block("x = tma.load.evict_first.evict_last g => shared;"),
     ["3:28: only one TMA eviction modifier is allowed."]),
    (block("x = tma.load.swiz<128>.evict_last g => shared;"),
     ["3:26: TMA eviction modifier must precede '.swiz'."]),
    (block("x = tma.load.evict_last.async g => shared;\n  wait x;"),
     ["3:26: TMA eviction modifier must follow '.async'."]),
    (block("x = dma.copy.swiz<256> g => shared;"),
     ["3:21: swizzle value must be 128, 64, or 32"]),
    (block("shared s32 [8, 32] s;\n  tma.load s => h;"),
     ["4:3: 'tma.load' copies global memory into shared memory, but this one copies "
      "shared memory into global memory."]),
    (block("x = dma.copy.swiz<64> g.subspan(1, 32).at(0, 0) => local;"),
     ["3:3: '.swiz<64>' lays out a tile in shared memory, but this copy moves global "
      "memory into local memory."]),
    (block("x = tma.any;"), ["3:3: tma.any 'x' is defined but never used!"]),
    ("tma.any;", ["2:1: syntax error: 'tma.any' makes a placeholder future and must be "
                  "assigned to a name, as in 'f = tma.any;'."]),
    (block("x = dma.copy.swiz g => shared;"), []),          # a bare '.swiz': no swizzle
    (block("x = dma.copy.multicast g => shared;"),
     ["3:16: '.multicast' is a TMA-only modifier."]),
    (block("shared s32 [8, 32] s;\n  tma.copy.multicast s => h;"),
     ["4:3: '.multicast' loads global memory into the shared memory of every block of a "
      "cluster, but this copy goes from shared memory into global memory."]),
    (block("tma.load.evict_last.multicast g => shared;"),
     ["3:3: L2 eviction hints are not yet supported for multicast TMA."]),
    (block("x = tma.load.async.multicast.swiz<128> g => shared;\n  wait x;"), []),
    (block("x = tma.load.async.evict_first.swiz<128> g => shared;\n  wait x;\n"
           "  tma.copy.swiz<128> x => h;"), []),
]


@pytest.mark.parametrize("body, want", ERRORS)
def test_static_errors(body, want):
    assert diagnose(body) == want


def test_tma_copy_between_global_buffers_copies_as_dma_with_a_warning():
    assert diagnose("f = tma.copy g => h;", "warning") == [
        "2:1: 'tma.copy' from global to global memory is not a TMA transfer, which moves "
        "tiles between global and shared memory; it copies as 'dma.copy' does."]


def test_the_descriptor_records_tma_swizzle_and_l2_hint():
    mod = croqvm.compile("__co__ void f(global s32 [8, 32] g) {\n" + block(
        "x = tma.load.async.evict_last.swiz<64> g => shared;\n  wait x;") + "\n}").module
    (d,) = mod.functions[0].kernels[0].code.dmas
    assert (d.tma, d.swizzle, d.l2_hint, d.text) == (True, 64, L2Hint.EVICT_LAST, "tma.load")


# --------------------------------------------------------------------------- execution

def placed(logical: np.ndarray, swizzle: int) -> np.ndarray:
    """The buffer a swizzle of ``swizzle`` bytes makes of ``logical``: in every 128-byte
    line L, the 16-byte chunk c goes to chunk c ^ (L mod (swizzle / 16)) (the CUTLASS
    picture of Swizzle<B, 4, 3>)."""
    raw = logical.reshape(-1).view(np.uint8)
    lines = raw.reshape(-1, 8, 16)
    out = np.empty_like(lines)
    for line in range(lines.shape[0]):
        for c in range(8):
            out[line, c ^ (line % (swizzle // 16))] = lines[line, c]
    return out.reshape(-1).view(logical.dtype).reshape(logical.shape)


SWIZZLED_LOAD = """
__co__ void f(global T [8, N] a, global T [8, N] raw, global T [8, N] back) {
  parallel p by 1 : block {
    shared T [8, N] s;
    x = tma.load.async.swiz<SW> a => s;
    wait x;
    parallel t by 32 : thread
      foreach i in [8]
        foreach j in [N / 32]
          raw.at(i, j * 32 + t) = s.at(i, j * 32 + t);
    tma.copy.STORE s => back;
  }
}
"""


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("swizzle", [32, 64, 128])
@pytest.mark.parametrize("dtype, name", [(np.int32, "s32"), (np.float16, "f16")])
def test_a_swizzled_load_places_the_tile_by_the_swizzle(swizzle, dtype, name):
    n = 256 // np.dtype(dtype).itemsize          # two 128-byte lines per row
    a = np.arange(8 * n).astype(dtype).reshape(8, n)
    src = SWIZZLED_LOAD.replace("T ", name + " ").replace("SW", str(swizzle))
    src = src.replace("N", str(n)).replace("STORE", f"swiz<{swizzle}>")
    raw, back = np.zeros_like(a), np.zeros_like(a)
    engines.run(croqvm.compile(src), "f", a, raw, back)
    assert np.array_equal(raw, placed(a, swizzle))
    assert not np.array_equal(raw, a)
    assert np.array_equal(back, a)        # the store reads through the same swizzle


@pytest.mark.usefixtures("engine")
def test_a_store_without_the_swizzle_copies_the_placed_bytes():
    a = np.arange(8 * 64).astype(np.int32).reshape(8, 64)
    src = SWIZZLED_LOAD.replace("T ", "s32 ").replace("SW", "128").replace("N", "64")
    raw, back = np.zeros_like(a), np.zeros_like(a)
    engines.run(croqvm.compile(src.replace("tma.copy.STORE", "tma.copy")), "f", a, raw, back)
    assert np.array_equal(back, placed(a, 128))


MMA = """
__co__ void mm(global f16 [16, 64] a, global f16 [16, 64] b, global f32 [16, 16] c) {
  parallel p by 1 : block {
    sa = tma.load.swiz<128> a => shared;
    sb = tma.load.swiz<128> b => shared;
    parallel w by 1 : group {
      acc = mma.fill.f32 0.0f;
      foreach k in [4] {
        fa = mma.load sa.chunkat(_, k);
        fb = mma.load LOAD sb.chunkat(_, k);
        mma.row.row acc, fa, fb;
      }
      mma.store acc, c;
    }
  }
}
"""


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("load, right", [("", True), (".swiz<128>", True),
                                          (".swiz<64>", False)])
def test_mma_load_reads_through_the_swizzle_of_the_copy(load, right):
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (16, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 64)).astype(np.float16)
    prog = croqvm.compile(MMA.replace("mma.load LOAD", "mma.load" + load), "mm.co")
    c = np.zeros((16, 16), np.float32)
    engines.run(prog, "mm", a, b, c)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    assert np.array_equal(c, ref) == right
    warned = [d.message for d in prog.diagnostics]
    assert bool(warned) != right
    if not right:
        assert "'mma.load.swiz<64>' reads 'sb' through a 64-byte swizzle, but the copy at " \
               "line 5 laid it out with '.swiz<128>'" in warned[0]


DOUBLE_BUFFER = """
__co__ auto f(s32 [8, 4, 16] l, s32 [8, 4, 16] r) {
  s32 [l.span] output;
  parallel p by 4 : block {
    with k in [4] {
      l0 = tma.load.async l.chunkat(_, k, p) => shared;
      r0 = tma.load.async r.chunkat(_, k, p) => shared;
      l1 = tma.any;
      r1 = tma.any;
      shared s32 [l0.span] out;
      foreach k(1:) {
        l1 = tma.load.async l.chunkat(_, k, p) => shared;
        r1 = tma.load.async r.chunkat(_, k, p) => shared;
        wait l0, r0;
        foreach {i, j, m} in [l0.span]
          out.at(i, j, m) = l0.data.at(i, j, m) + r0.data.at(i, j, m);
        tma.copy out => output.chunkat(_, k - 1, p);
        swap l0, l1;
        swap r0, r1;
      }
      wait l0, r0;
      foreach {i, j, m} in [l0.span]
        out.at(i, j, m) = l0.data.at(i, j, m) + r0.data.at(i, j, m);
      tma.copy out => output.chunkat(_, k(-1), p);
    }
  }
  return output;
}
"""


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("schedule, seed", [("rr", 0), ("random", 3)])
def test_double_buffered_tma_with_placeholders(schedule, seed):
    rng = np.random.default_rng(5)
    l, r = (rng.integers(-50, 50, (8, 4, 16)).astype(np.int32) for _ in range(2))
    out = engines.run(croqvm.compile(DOUBLE_BUFFER), "f", l, r, schedule=schedule, seed=seed)
    assert np.array_equal(out, l + r)


@pytest.mark.usefixtures("engine")
def test_reading_a_tma_load_before_its_wait_is_an_error():
    src = ("__co__ void f(global s32 [4] g) {\n  parallel p by 1 : block {\n"
           "    x = tma.load.async g => shared;\n    println(x.data.at(0));\n    wait x;\n"
           "  }\n}\n")
    with pytest.raises(KernelFault) as e:
        engines.run(croqvm.compile(src, "t.co"), "f", np.zeros(4, np.int32),
                    out=io.StringIO())
    assert "t.co:4:5: runtime error: future 'x' is not waited before using." in str(e.value)


def test_the_race_checker_sees_a_tma_load_in_flight_until_its_wait():
    src = ("__co__ void f(global s32 [8, 32] a, global s32 [8, 32] out) {\n"
           "  parallel p by 1 : block {\n    shared s32 [8, 32] s;\n"
           "    x = tma.load.async.swiz<128> a => s;\n    parallel t by 32 : thread\n"
           "      out.at(0, t) = s.at(0, t);\n    wait x;\n  }\n}\n")
    a = np.zeros((8, 32), np.int32)
    with pytest.raises(KernelFault) as e:
        croqvm.compile(src, "t.co").run("f", a, a.copy(), engine="python", check="race")
    assert ("t.co:6:7: runtime error: data race on shared 's' element (0, 0): read here, "
            "written by the async copy 'tma.load' at t.co:4:5; the copy is in flight until "
            "its wait at t.co:7:5.") in str(e.value)
    fixed = src.replace("    parallel t by 32 : thread\n      out.at(0, t) = s.at(0, t);\n"
                        "    wait x;\n", "    wait x;\n    parallel t by 32 : thread\n"
                        "      out.at(0, t) = s.at(0, t);\n")
    croqvm.compile(fixed, "t.co").run("f", a, a.copy(), engine="python", check="race")


# --------------------------------------------------------------------------- bytecode

def _tma_module():
    return croqvm.compile("__co__ void f(global s32 [8, 32] g) {\n" + block(
        "x = tma.load.async.evict_first.swiz<128> g => shared;\n  wait x;") + "\n}").module


@pytest.mark.parametrize("change, message", [
    (lambda d, v: setattr(d, "swizzle", 48), "swizzle of 48 bytes (expected one of 0, 32, "
                                             "64, 128)"),
    (lambda d, v: setattr(v, "swizzle", 16), "swizzle of 16 bytes"),
    (lambda d, v: setattr(d, "tma", False), "L2 hint on a DMA that is not a TMA load into "
                                            "shared memory"),
])
def test_the_verifier_checks_tma_fields(change, message):
    module = _tma_module()
    code = module.functions[0].kernels[0].code
    change(code.dmas[0], code.views[0])
    with pytest.raises(BytecodeError) as e:
        verify(module)
    assert message in str(e.value)


MULTICAST = """
__co__ void mc(global s32 [8, 4] a, global s32 [4, 2, 16] out) {
  parallel {c} by [2] : cluster {
    parallel {bm, bn} by [4, 2] : block {
      shared s32 [4, 4] t;
      tma.copy.multicast a.subspan(4, 4).at(bn, 0) => t;
      parallel tid by 16 : thread
        out.at(bm, bn, tid) = t.at(tid / 4, tid % 4) + c * 100;
    }
  }
}
"""


@pytest.mark.usefixtures("engine")
def test_a_multicast_load_gives_every_block_of_the_cluster_its_tile():
    """The two blocks of each cluster (bm = 2q and 2q + 1) name the same tile of 'a', the
    one the cluster's first block multicasts; each block sees it in its shared memory."""
    a = np.arange(32, dtype=np.int32).reshape(8, 4)
    out = np.zeros((4, 2, 16), np.int32)
    engines.run(croqvm.compile(MULTICAST, "mc.co"), "mc", a, out)
    for bm in range(4):
        for bn in range(2):
            assert np.array_equal(out[bm, bn], a[4 * bn:4 * bn + 4].reshape(16) + bm % 2 * 100)


def test_multicast_is_recorded_listed_and_needs_sm_90a():
    module = croqvm.compile(MULTICAST, "mc.co").module
    code = module.functions[0].kernels[0].code
    assert [d.multicast for d in code.dmas] == [True]
    assert "copy view0 => view1 tma multicast" in disassemble(module)
    assert "cq_dma_bulk(dm, tb" in emit(module, arch="sm_90a").text
    with pytest.raises(CompileError) as e:
        emit(module, arch="sm_80")
    assert str(e.value) == ("mc.co:6:7: error: 'tma.copy.multicast' (a TMA load into every "
                            "block of a cluster) needs sm_90a; the target is sm_80 "
                            "(emit-cuda --arch sm_90a)")


def test_the_verifier_checks_multicast():
    module = croqvm.compile(MULTICAST, "mc.co").module
    module.functions[0].kernels[0].code.dmas[0].l2_hint = L2Hint.EVICT_LAST
    with pytest.raises(BytecodeError) as e:
        verify(module)
    assert "multicast on a DMA that is not a TMA load into shared memory without an L2 " \
           "hint" in str(e.value)


def test_tma_loads_go_as_tensor_map_boxes_on_sm_90a_and_as_cp_async_chunks_on_sm_80():
    """A load of constant shape is written out (emit_copy.py): on sm_90a a box of its
    tensor map with the load's L2 hint, else (and on sm_80) 16-byte cp.async chunks."""
    module = _tma_module()
    sm90 = emit(module, arch="sm_90a").text
    assert "cq_tma_tile(" in sm90 and ", 1); } } else" in sm90     # evict_first
    assert "cq_dma_bulk(" not in sm90 and "cq_cp_async<16>(" in sm90
    assert "cq_future_land(f0, " in sm90
    sm80 = emit(module, arch="sm_80").text     # a tile copy written out (emit_copy.py)
    assert "cq_dma_bulk(" not in sm80 and "cq_cp_async<16>(" in sm80


@pytest.mark.parametrize("swizzle, races", [("", False), (".swiz<128>", True)])
def test_the_race_checker_sees_where_a_swizzle_puts_the_elements(swizzle, races):
    """Columns 8-15 of row 1 are bytes 288-351, in the 128-byte line 2, where the swizzle
    exchanges 16-byte chunks 0 and 2 (and 1 and 3): the copy writes element (1, 0)."""
    src = ("__co__ void f(global s32 [2, 8] a, global s32 [2, 64] out) {\n"
           "  parallel p by 1 : block {\n    shared s32 [2, 64] s;\n"
           f"    x = tma.load.async{swizzle} a => s.subspan(2, 8).at(0, 1);\n"
           "    parallel t by 1 : thread\n      out.at(1, 0) = s.at(1, 0);\n"
           "    wait x;\n  }\n}\n")
    prog = croqvm.compile(src, "t.co")
    a, out = np.zeros((2, 8), np.int32), np.zeros((2, 64), np.int32)
    if not races:
        prog.run("f", a, out, engine="python", check="race")
        return
    with pytest.raises(KernelFault) as e:
        prog.run("f", a, out, engine="python", check="race")
    assert "data race on shared 's' element (1, 0): read here, written by the async copy " \
           "'tma.load'" in str(e.value)


@pytest.mark.usefixtures("engine")
def test_elements_after_the_last_whole_swizzle_block_stay_put():
    """s32 [5, 12] is 240 bytes: seven whole 32-byte blocks and 16 bytes more. In the
    second 128-byte line (16-byte chunks 8-15) '.swiz<32>' exchanges chunks 8 and 9, 10
    and 11, 12 and 13; chunk 14 lies after the last whole block and stays."""
    src = SWIZZLED_LOAD.replace("T ", "s32 ").replace("SW", "32").replace("[8, N]", "[5, 12]")
    src = src.replace("foreach i in [8]\n        foreach j in [N / 32]\n          raw.at(i, j * "
                      "32 + t) = s.at(i, j * 32 + t);", "foreach i in [5]\n        if (t < 12)"
                      " raw.at(i, t) = s.at(i, t);").replace("STORE", "swiz<32>")
    a = np.arange(60, dtype=np.int32).reshape(5, 12)
    chunks = a.reshape(-1, 4)                      # 15 chunks of four s32
    order = list(range(8)) + [9, 8, 11, 10, 13, 12, 14]
    raw, back = np.zeros_like(a), np.zeros_like(a)
    engines.run(croqvm.compile(src), "f", a, raw, back)
    assert np.array_equal(raw, chunks[order].reshape(5, 12))
    assert np.array_equal(back, a)


PER_WARPGROUP = """
__co__ void f(global s32 [2, 32] out) {
  parallel b by 1 : block {
    shared s32 [1, 32] s[2];
    parallel p by 2 : group-4 {
      parallel t by 128 : thread
        if (t < 32) s[p].at(0, t) = p * 100 + t;
      OP s[p] => out.subspan(1, 32).at(p, 0);
    }
  }
}
"""


@pytest.mark.parametrize("op", ["tma.copy", "dma.copy"])
@pytest.mark.usefixtures("engine")
def test_a_copy_indexed_by_the_warpgroup_is_one_per_warpgroup(op):
    # §9.3.2: the operands name 'p', so each warpgroup stores its own row
    out = np.zeros((2, 32), np.int32)
    engines.run(croqvm.compile(PER_WARPGROUP.replace("OP", op)), "f", out)
    assert np.array_equal(out, np.arange(32) + np.array([[0], [100]]))


def test_a_copy_indexed_through_a_scalar_is_still_one_per_block(engine):
    if not engines.interprets(engine):
        pytest.skip("generated CUDA does not compare the operands of a collective")
    src = PER_WARPGROUP.replace("OP s[p] => out.subspan(1, 32).at(p, 0)",
                                "q = p;\n      dma.copy s[q] => out.subspan(1, 32).at(q, 0)")
    with pytest.raises(KernelFault) as e:
        engines.run(croqvm.compile(src, "t.co"), "f", np.zeros((2, 32), np.int32))
    assert "runtime error: operands of collective 'dma.copy' differ between lane 0 and lane " \
           "128 (source s[0] vs s[1])." in str(e.value)
