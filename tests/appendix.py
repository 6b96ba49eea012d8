"""The programs of docs/LANGUAGE.md Appendix A, verbatim, shared by the test suites.

tests/test_check.py compares them with docs/LANGUAGE.md, so they cannot drift."""

APPENDIX = {
    "A.1": """\
__co__ void add_demo() {
  s32 [2, 3] a;
  s32 [2, 3] b {10};
  foreach {i, j} in [2, 3]
    a.at(i, j) = i * 3 + j;
  parallel {i, j} by [2, 3]                 // one unannotated level: 6 threads, one block
    a.at(i, j) += b.at(i, j);
  foreach i in [2]
    println(a.at(i, 0), a.at(i, 1), a.at(i, 2));
}
""",
    "A.2": """\
__co__ auto matmul(s32 [M, K] a, s32 [K, N] b) {
  s32 [M, N] c;                                         // zeroed
  parallel {bm, bn} by [M / 8, N / 8] : block, {r, s} by [8, 8] : thread {
    foreach k in [K]
      c.at(bm # r, bn # s) += a.at(bm # r, k) * b.at(k, bn # s);   // bm # r = bm*8 + r
  }
  return c;
}
""",
    "A.3": """\
__co__ auto matmul_tiled(f32 [M, K] a, f32 [K, N] b) {
  f32 [M, N] c;
  parallel {bm, bn} by [M / 16, N / 16] : block {
    foreach kt in [K / 32] {
      ta = dma.copy a.subspan(16, 32).at(bm, kt) => shared;   // one copy per block
      tb = dma.copy b.subspan(32, 16).at(kt, bn) => shared;
      parallel {tm, tn} by [16, 16] : thread {                // 256 lanes
        foreach k in [32]
          c.at(bm # tm, bn # tn) += ta.data.at(tm, k) * tb.data.at(k, tn);
      }                                                       // join barrier
    }
  }
  return c;
}
""",
    "A.4": """\
__co__ auto matmul_db(f32 [M, K] a, f32 [K, N] b) {
  f32 [M, N] c;
  parallel {bm, bn} by [M / 16, N / 16] : block, {tm, tn} by [16, 16] : thread {
    with kt in K / 16 {
      cur_a = dma.copy.async a.subspan(16, 16).at(bm, kt) => shared;   // kt is 0 here
      cur_b = dma.copy.async b.subspan(16, 16).at(kt, bn) => shared;
      nxt_a = dma.any;
      nxt_b = dma.any;
      foreach kt(1:) {
        nxt_a = dma.copy.async a.subspan(16, 16).at(bm, kt) => shared;
        nxt_b = dma.copy.async b.subspan(16, 16).at(kt, bn) => shared;
        wait cur_a, cur_b;
        foreach k in [16]
          c.at(bm # tm, bn # tn) += cur_a.data.at(tm, k) * cur_b.data.at(k, tn);
        swap(cur_a, nxt_a);
        swap(cur_b, nxt_b);
      }
      wait cur_a, cur_b;                    // the last tile is still in flight
      foreach k in [16]
        c.at(bm # tm, bn # tn) += cur_a.data.at(tm, k) * cur_b.data.at(k, tn);
    }
  }
  return c;
}
""",
    "A.5": """\
#define BM 64
#define BN 64
#define BK 64
#define WK 16
#define STAGES 2

__co__ void gemm_ws(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] c) {
  parallel {bm, bn} by [cdiv(M, BM), cdiv(N, BN)] : block {
    shared event full[STAGES], empty[STAGES];
    shared f16 [BM, BK] sa[STAGES];
    shared f16 [BN, BK] sb[STAGES];
    shared f32 [BM, BN] sc;
    parallel role by 2 : group-4 {
      inthreads.async (role == 0) {                  // producer, warps 0-3
        foreach kt in [cdiv(K, BK)] {
          st = kt % STAGES;
          wait empty[st];
          dma.copy.zfill a.subspan(BM, BK).at(bm, kt) => sa[st];   // 128-lane collective
          dma.copy.zfill b.subspan(BN, BK).at(bn, kt) => sb[st];
          trigger full[st];                          // 128 arrivals per generation
        }
      }
      inthreads.async (role == 1) {                  // consumer, warps 4-7
        acc = mma.fill.f32 0.0f;                     // owned by warpgroup 1
        foreach s in [STAGES]
          trigger empty[s];                          // initial credits
        foreach kt in [cdiv(K, BK)] {
          st = kt % STAGES;
          wait full[st];
          foreach w in [BK / WK] {
            fa = mma.load sa[st].chunkat(_, w);      // [64, 16]
            fb = mma.load sb[st].chunkat(_, w);      // [64, 16]
            mma.row.row acc, fa, fb;                 // acc [64, 64] += fa * fb^T
          }
          mma.commit;
          trigger empty[st];
        }
        mma.store acc, sc;
        dma.copy sc => c.subspan(BM, BN).at(bm, bn); // edge tiles are clipped
      }
    }
  }
}
""",
    "A.6": """\
#define WORKERS 4
#define T 16

__co__ void scale_tiles(global f32 [M, N] x, f32 alpha) {
  int total = cdiv(M, T) * cdiv(N, T);
  parallel w by WORKERS : block, {r, s} by [T, T] : thread {
    foreach it in [cdiv(total, WORKERS)] {
      tile = it # w;                        // it * WORKERS + w: workers take turns
      if (tile < total) {                   // the last round has padding iterations
        row = (tile / cdiv(N, T)) * T + r;
        col = (tile % cdiv(N, T)) * T + s;
        if (row < M && col < N)
          x.at(row, col) = x.at(row, col) * alpha;
      }
    }
  }
}
""",
    "A.7": """\
__co__ void diverge() {
  s32 [8] v;
  parallel t by 8 : thread {
    if (t & 1 == 0) {                       // (t & 1) == 0 in Croqtile; croqvm warns
      v.at(t) = t * 10;
      println("even", t);
    } else {
      v.at(t) = 0 - t;
      println("odd", t);
    }
    println("join", t);
  }
  println(v.at(0), v.at(1), v.at(2), v.at(3), v.at(4), v.at(5), v.at(6), v.at(7));
}
""",
    "A.8": """\
#define STAGES 2

__co__ void broken() {
  s32 [8] out;
  parallel blk by 1 : block {
    shared event full[STAGES], empty[STAGES];
    shared s32 [STAGES] slot;
    parallel role by 2 : group-4 {
      inthreads.async (role == 0)
        foreach k in [8] {
          wait empty[k % STAGES];
          slot.at(k % STAGES) = k * k;
          trigger full[k % STAGES];
        }
      inthreads.async (role == 1) {
        // foreach s in [STAGES] trigger empty[s];      <- the missing initial credits
        foreach k in [8] {
          wait full[k % STAGES];
          out.at(k) = slot.at(k % STAGES);
          trigger empty[k % STAGES];
        }
      }
    }
  }
  println(out.at(7));
}
""",
}

# The deadlock report of A.8 compiled as broken.co (every engine prints it).
A8_REPORT = """\
broken.co:11:11: runtime error: deadlock: every live lane of block (0) is blocked
   11 |           wait empty[k % STAGES];
      |           ^~~~~~~~~~~~~~~~~~~~~~
  warps 0-3 (lanes 0-127): broken.co:11:11 'wait empty[k % STAGES]': slot empty[0]: \
completed generations 0, arrivals 0/128; these lanes wait for generation 0
  warps 4-7 (lanes 128-255): broken.co:18:11 'wait full[k % STAGES]': slot full[0]: \
completed generations 0, arrivals 0/128; these lanes wait for generation 0
  in kernel launched at broken.co:5:3
hint: no lane has triggered 'empty[0]' yet; a credit-based pipeline needs initial \
credits: trigger every slot once before the loop, or declare the event '= ready'."""
