/* What kernels written by croqvm/cuda/emit.py use besides the cq_* primitives: lane
 * masks, the rendezvous of a collective, views and futures, element checks, the DMA
 * copy and the generic MMA (LANGUAGE.md §7.4, §8, §9, §11; docs/EXECUTION.md §5-§8).
 * Built only on croqvm_rt.cuh and cq_numerics.h, so it is the same code on a GPU and in
 * the CPU runtime.
 *
 * Conventions: a lane mask is 32 words of 32 lanes (a block has at most 1024 lanes) in
 * shared memory; `lo`, `n` bound a unit instance's lanes; `site` numbers what a fault or
 * a wait reports (the generator's table of sites).
 */
#ifndef CQ_KERNEL_H
#define CQ_KERNEL_H

#include "croqvm_rt.cuh"
#include "cq_numerics.h"

#include <type_traits>

#define CQ_MAX_RANK 6
#define CQ_MASK_WORDS 32

/* ------------------------------------------------------------------ lane masks */

CQ_DEV bool cq_mask_has(const unsigned *m, int lane) { return (m[lane >> 5] >> (lane & 31)) & 1u; }
CQ_DEV void cq_mask_add(unsigned *m, int lane) { cq_atomic_or(&m[lane >> 5], 1u << (lane & 31)); }
CQ_DEV void cq_mask_remove(unsigned *m, int lane) {
  cq_atomic_and(&m[lane >> 5], ~(1u << (lane & 31)));
}

/* Lanes in [lo, hi) that are in both masks (`b` may be null: `a` alone). */
CQ_DEV int cq_mask_count(const unsigned *a, const unsigned *b, int lo, int hi) {
  int n = 0;
#pragma unroll 1   /* a few words: unrolled copies only raise register pressure */
  for (int w = lo >> 5; w <= (hi - 1) >> 5 && lo < hi; w++) {
    unsigned bits = a[w] & (b ? b[w] : ~0u);
    int first = w * 32, last = first + 32;
    if (lo > first) bits &= ~0u << (lo - first);
    if (hi < last) bits &= (1u << (hi - first)) - 1u;
    n += (int)cq_popc(bits);
  }
  return n;
}

/* a[i] of a small array indexed at run time, and a[i] = v: comparisons with every
   index, unrolled, so that the array stays in registers (an indexed access would put
   it in local memory). */
template <class T, int N> CQ_DEV T cq_pick(const T (&a)[N], long long i) {
  T v = a[0];
#pragma unroll
  for (int j = 1; j < N; j++)
    if (i == j) v = a[j];
  return v;
}

template <class T, int N> CQ_DEV void cq_put(T (&a)[N], long long i, T v) {
#pragma unroll
  for (int j = 0; j < N; j++)
    if (i == j) a[j] = v;
}

/* ------------------------------------------------------------------ collectives */

/* The participants of a collective are the live lanes of its lane set in the executing
   lane's unit instance [lo, hi) (LANGUAGE.md §7.4). `bar` is the site's mbarrier for
   that instance, counting the members; null: every lane of the block takes part, and
   __syncthreads (which waits for every thread that has not exited) does. */
struct cq_coll {
  cq_mbar *bar;
  const unsigned *members; /* null: every lane */
  const unsigned *live;
  int lo, hi;
};

CQ_DEV void cq_coll_sync(const cq_coll &c, int site) {
  if (c.bar) cq_mbar_wait(c.bar, cq_mbar_arrive(c.bar), site);
  else cq_sync_block(site);
}

/* 32 lanes of mask m from lane `from` on as bits, lane `from` lowest (lanes past the
   mask: none); m null: every lane. */
CQ_DEV unsigned cq_mask_bits(const unsigned *m, int from) {
  if (!m) return ~0u;
  int w = from >> 5, s = from & 31;
  unsigned lo = w < CQ_MASK_WORDS ? m[w] : 0u, hi = w + 1 < CQ_MASK_WORDS ? m[w + 1] : 0u;
  return s ? (lo >> s) | (hi << (32 - s)) : lo;
}

/* The lowest n of 32 bits (n may lie outside 0-32). */
CQ_DEV unsigned cq_low_bits(int n) { return n <= 0 ? 0u : n >= 32 ? ~0u : (1u << n) - 1u; }

/* Word w of the members of collective c's instance [lo, hi) that have terminated (bit b:
   lane lo + 32 w + b). */
CQ_DEV unsigned cq_coll_gone(const cq_coll &c, int w) {
  int from = c.lo + 32 * w;
  return cq_mask_bits(c.members, from) & ~cq_mask_bits(c.live, from) &
         cq_low_bits(c.hi - from);
}

/* Word w of the lanes of the unit instance [lo, lo + unit) that do not take part in
   collective c: past the block, not members, or terminated. */
CQ_DEV unsigned cq_coll_absent(const cq_coll &c, int lo, int unit, int nlanes, int w) {
  int from = lo + 32 * w;
  unsigned present = cq_mask_bits(c.members, from) & cq_mask_bits(c.live, from) &
                     cq_low_bits(nlanes - from);
  return cq_low_bits(unit - 32 * w) & ~present;
}

/* How many participants, and the executing lane's rank among them: the work of a
   collective is shared out by rank. */
CQ_DEV int cq_coll_parts(const cq_coll &c) { return cq_mask_count(c.live, c.members, c.lo, c.hi); }
CQ_DEV int cq_coll_rank(const cq_coll &c, int lane) {
  return cq_mask_count(c.live, c.members, c.lo, lane);
}

/* ------------------------------------------------------------------ views and futures */

/* A view (§8.1): a buffer instance (`base`, `elem` bytes per element, row-major `dims`),
   origin and extents in its coordinates. `slot`/`index` name the buffer for messages
   (the kernel's buffer slot and array element, -1 outside an array). */
struct cq_view {
  unsigned char *base;
  int elem, rank, slot, index;
  long long dims[CQ_MAX_RANK], origin[CQ_MAX_RANK], ext[CQ_MAX_RANK];
  int strided;                  /* elements lie stride[k] apart along dimension k (.sqz()) */
  long long stride[CQ_MAX_RANK];
};

/* What a lane's future holds (§9.4): a view of its data, or nothing (a placeholder);
   whether the last transfer was async and whether this lane has waited for it; the
   span of the DMA that issued it. */
struct cq_future {
  cq_view v;
  int has_data, is_async, waited, issued;
  cq_tma_bar *tma;     /* the barrier of a bulk copy in flight, else null (§9.7) */
  unsigned phase;      /* the parity of the barrier phase that completes it */
  unsigned group;      /* the lane's cp.async groups committed when it was issued */
};

CQ_DEV bool cq_future_pending(const cq_future &f) { return f.has_data && f.is_async && !f.waited; }

/* Until the transfer future f holds has landed for this lane (§9.5.3): the lane's
   cp.async copies, and a TMA bulk copy on its barrier (§9.7). */
CQ_DEV void cq_future_land(const cq_future &f, int site) {
  cq_cp_async_wait<0>();
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if (f.tma && !f.waited) cq_tma_wait(f.tma, f.phase, site);
#else
  (void)f, (void)site;
#endif
}

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* The word after a TMA barrier that the issuer of its copies publishes (§9.7): bit 0 the
   parity of the phase the copies it issued last complete, bit 1 set once it has issued
   any. */
CQ_DEV unsigned cq_tma_published(cq_tma_bar *b) { return ((volatile unsigned *)(b + 1))[0] & 1u; }

/* Before the issuer of copies on barrier b announces their bytes: it publishes the
   parity of the phase the new copies complete. */
CQ_DEV void cq_tma_publish(cq_tma_bar *b) {
  ((volatile unsigned *)(b + 1))[0] = 2u | cq_tma_phase(b);
}

/* cq_tma_publish in a kernel whose events publish copies (§10.7): the phase armed
   before has completed first. A published copy may have had no waiter yet, and a
   barrier armed again before its phase completes would count both copies in one phase;
   in a pipeline that phase completed long before, so the wait costs one test. */
CQ_DEV void cq_tma_arm(cq_tma_bar *b, int site) {
  const unsigned armed = ((volatile unsigned *)(b + 1))[0];
  if (armed & 2u) cq_tma_wait(b, armed & 1u, site);
  cq_tma_publish(b);
}

/* After a lane's wait of an event slot has passed (§10.7): the TMA copies published at
   the slot have landed. `landings` is the slot's set of barriers (bit i: the barrier
   `stride` * i bytes from `bars`), each waited at the phase its issuer armed last: that
   of the copies the generation waited for published, or of later ones, whose phase
   completes after it. */
CQ_DEV void cq_landings_wait(const unsigned long long *landings, unsigned char *bars,
                             int stride, int site) {
  unsigned long long set = *(volatile const unsigned long long *)landings;
  for (int i = 0; set; i++, set >>= 1)
    if (set & 1) {
      cq_tma_bar *b = (cq_tma_bar *)(bars + i * stride);
      cq_tma_wait(b, cq_tma_published(b), site);
    }
}

/* Every TMA barrier of the block whose issuer armed it has completed that phase: no copy
   is in flight into the shared memory of a block that ends. */
CQ_DEV void cq_tma_drain(unsigned char *bars, int count, int stride, int site) {
  for (int i = 0; i < count; i++) {
    cq_tma_bar *b = (cq_tma_bar *)(bars + i * stride);
    if (((volatile unsigned *)(b + 1))[0] & 2u) cq_tma_wait(b, cq_tma_published(b), site);
  }
}
#endif

CQ_DEV long long cq_elements(const long long *ext, int rank) {
  long long n = 1;
  for (int k = 0; k < rank; k++) n *= ext[k];
  return n;
}

/* The in-range index interval of dimension k of a view: [max(0, -o), min(e, d - o)). */
CQ_DEV long long cq_lo(const cq_view &v, int k) { return v.origin[k] < 0 ? -v.origin[k] : 0; }
CQ_DEV long long cq_hi(const cq_view &v, int k) {
  long long h = v.dims[k] - v.origin[k];
  return v.ext[k] < h ? v.ext[k] : h;
}

/* The byte offset of view element idx (in range), row-major in the root. */
CQ_DEV long long cq_offset(const cq_view &v, const long long *idx) {
  long long off = 0;
  for (int k = 0; k < v.rank; k++)
    off = v.strided ? off + (v.origin[k] + idx[k]) * v.stride[k]
                    : off * v.dims[k] + v.origin[k] + idx[k];
  return off * v.elem;
}

/* cq_offset of an index of R dimensions, R known when compiling (the view's rank):
   unrolled, so that view and index can stay in registers. */
template <int R> CQ_DEV long long cq_offset_r(const cq_view &v, const long long (&idx)[R]) {
  long long off = 0;
#pragma unroll
  for (int k = 0; k < R; k++)
    off = v.strided ? off + (v.origin[k] + idx[k]) * v.stride[k]
                    : off * v.dims[k] + v.origin[k] + idx[k];
  return off * v.elem;
}

/* span_as (§8.3.3): view v's buffer as its elements from row-major position `first` on,
   seen as an array of extents space[n] at origin 0; false when that reaches outside the
   buffer (memory.py view_of). */
CQ_DEV bool cq_view_reshape(cq_view &v, long long first, const long long *space, int n) {
  long long count = 1, have = cq_elements(v.dims, v.rank);
  bool bad = first < 0, zero = false;
  for (int k = 0; k < n; k++) bad = bad || space[k] < 0, zero = zero || space[k] == 0;
  for (int k = 0; k < n && !bad && !zero; k++) {
    if (count > have / space[k]) bad = true;   /* more elements than the buffer's */
    count *= space[k];
  }
  if (zero) count = 0;
  if (bad || count > have - first) return false;
  v.base += first * v.elem;
  v.rank = n;
  for (int k = 0; k < n; k++) v.dims[k] = space[k], v.origin[k] = 0;
  return true;
}

/* A future's data (view v), for a span_as or element strides of it: where its first
   element lies in its buffer, in *start, and v as that whole buffer in one dimension;
   false when the data does not lie contiguous there (one extent other than 1 at most
   before whole dimensions), v unchanged (memory.py window_start). */
CQ_DEV bool cq_view_window(cq_view &v, long long *start) {
  bool ok = !v.strided, partial = false;
  long long s = 0;
  for (int k = 0; k < v.rank; k++) {
    ok = ok && v.origin[k] >= 0 && v.origin[k] + v.ext[k] <= v.dims[k] &&
         (!partial || v.ext[k] == v.dims[k]);
    partial = partial || v.ext[k] != 1;
    s = s * v.dims[k] + v.origin[k];
  }
  if (!ok) return false;
  long long count = cq_elements(v.dims, v.rank);
  v.rank = 1;
  v.dims[0] = v.ext[0] = count;
  v.origin[0] = 0;
  *start = s;
  return true;
}

/* Element strides (§8.3.2; memory.py strided): view v's buffer as a box of extents
   ext[n] at origin 0 whose element r lies at position first + sum((org + r) * stride);
   false when an element lies outside the buffer, the lowest in row-major order in *at,
   v unchanged. The corners settle the usual case without visiting every element. */
CQ_DEV bool cq_view_strided(cq_view &v, long long first, const long long *org,
                            const long long *stride, const long long *ext, int n,
                            long long *at) {
  long long have = cq_elements(v.dims, v.rank), lo = 0, hi = 0;
  bool empty = false;
  for (int k = 0; k < n; k++) {
    first += org[k] * stride[k];
    long long last = (ext[k] - 1) * stride[k];
    lo += last < 0 ? last : 0;
    hi += last > 0 ? last : 0;
    empty = empty || ext[k] < 1;
  }
  if (!empty && (first + lo < 0 || first + hi >= have)) {
    long long r[CQ_MAX_RANK] = {0};
    for (;;) {
      long long p = first;
      for (int k = 0; k < n; k++) p += r[k] * stride[k];
      if (p < 0 || p >= have) {
        *at = p;
        return false;
      }
      int k = n - 1;
      while (k >= 0 && ++r[k] == ext[k]) r[k--] = 0;
      if (k < 0) break;
    }
  }
  if (!empty) v.base += first * v.elem;
  v.rank = n;
  v.strided = 1;
  for (int k = 0; k < n; k++)
    v.dims[k] = v.ext[k] = ext[k], v.origin[k] = 0, v.stride[k] = stride[k];
  return true;
}

/* .sqz() (§8.3.4): view v as the n dimensions shown[] it shows, each element where it was;
   the others (of extent 1) fold into its base. A folded coordinate outside its dimension
   leaves no element in range (dims[0] = 0); a copy or a load faults on it before. */
CQ_DEV void cq_view_squeeze(cq_view &v, int n, const int *shown) {
  cq_view out = v;
  long long stride = 1, skip = 0;
  bool inside = true;
  int j = n - 1;
  for (int k = v.rank - 1; k >= 0; k--) {
    long long s = v.strided ? v.stride[k] : stride;
    stride *= v.dims[k];
    if (j >= 0 && shown[j] == k) {
      out.dims[j] = v.dims[k], out.origin[j] = v.origin[k], out.ext[j] = v.ext[k];
      out.stride[j--] = s;
    } else {
      inside = inside && v.origin[k] >= 0 && v.origin[k] < v.dims[k];
      skip += v.origin[k] * s;
    }
  }
  out.rank = n;
  out.strided = 1;
  if (inside) out.base += skip * v.elem;
  else out.dims[0] = 0;
  v = out;
}

/* §9.7: where a swizzle of `swizzle` bytes (0: none) places the element at byte offset
   `off` of view v's buffer: off ^ ((off & M) >> 3), M the log2(swizzle / 16) bits from
   bit 7 up; the elements after the buffer's last whole swizzle-sized block stay put
   (croqvm/interp/memory.py swizzled_positions). */
CQ_DEV long long cq_swizzle(const cq_view &v, long long off, int swizzle) {
  if (!swizzle) return off;
  long long count = 1;
  for (int k = 0; k < v.rank; k++) count *= v.dims[k];
  if (off + v.elem > count * v.elem / swizzle * swizzle) return off;
  long long mask = (long long)((swizzle >> 4) - 1) << 7;
  return off ^ ((off & mask) >> 3);
}

/* cq_swizzle with the buffer's size in bytes given (a multiple of `elem`). */
CQ_DEV long long cq_swizzle_at(long long off, int elem, long long bytes, int swizzle) {
  if (!swizzle || off + elem > bytes / swizzle * swizzle) return off;
  long long mask = (long long)((swizzle >> 4) - 1) << 7;
  return off ^ ((off & mask) >> 3);
}

/* cq_swizzle of a view of R dimensions, R known when compiling: unrolled. */
template <int R> CQ_DEV long long cq_swizzle_r(const cq_view &v, long long off, int swizzle) {
  if (!swizzle) return off;
  long long count = 1;
#pragma unroll
  for (int k = 0; k < R; k++) count *= v.dims[k];
  return cq_swizzle_at(off, v.elem, count * v.elem, swizzle);
}

/* An element access (§8.6): every index in its in-range interval, else a fault of
   `site` with the indices, the dimension and the interval (OUT_OF_RANGE). */
CQ_OUTLINED bool cq_check_index(const cq_view &v, const long long *idx, int site) {
  for (int k = 0; k < v.rank; k++) {
    long long lo = cq_lo(v, k), hi = cq_hi(v, k);
    if (idx[k] < lo || idx[k] >= hi) {
      long long a[16] = {0};
      for (int j = 0; j < v.rank; j++) a[j] = idx[j];
      a[v.rank] = k;
      a[v.rank + 1] = lo;
      a[v.rank + 2] = hi;
      cq_fault_n(site, a, v.rank + 3);
      return false;
    }
  }
  return true;
}

/* cq_check_index of an index of R dimensions, R known when compiling: inline and
   unrolled, the same fault record; cq_dims_in, an access to a whole buffer instance
   (origin 0): every index below its extent, else OUT_OF_RANGE as cq_check_index. */
template <int R> CQ_DEV bool cq_index_in(const cq_view &v, const long long (&idx)[R], int site) {
#pragma unroll
  for (int k = 0; k < R; k++) {
    long long lo = cq_lo(v, k), hi = cq_hi(v, k);
    if (idx[k] < lo || idx[k] >= hi) {
      long long a[R + 4];
#pragma unroll
      for (int j = 0; j < R; j++) a[j] = idx[j];
      a[R] = k, a[R + 1] = lo, a[R + 2] = hi, a[R + 3] = 0;
      cq_fault_values(site, a);
      return false;
    }
  }
  return true;
}

template <int R>
CQ_DEV bool cq_dims_in(const long long (&idx)[R], const long long (&dims)[R], int site) {
#pragma unroll
  for (int k = 0; k < R; k++) {
    long long hi = dims[k];   /* read here: the fault paths may merge, k a run-time value */
    if (idx[k] < 0 || idx[k] >= hi) {
      long long a[R + 4];
#pragma unroll
      for (int j = 0; j < R; j++) a[j] = idx[j];
      a[R] = k, a[R + 1] = 0, a[R + 2] = hi, a[R + 3] = 0;
      cq_fault_values(site, a);
      return false;
    }
  }
  return true;
}

/* A tile for a DMA or mma operation (§9.5.1): faults EMPTY_TILE (`site`) when an extent
   is below 1 and TILE_OUTSIDE (`site` + 1) when no element lies in range; args: the
   buffer (slot, index), origin and extents or root shape. */
CQ_OUTLINED bool cq_check_tile(const cq_view &v, int site) {
  bool empty = false, outside = false;
  for (int k = 0; k < v.rank; k++) {
    if (v.ext[k] < 1) empty = true;
    else if (cq_hi(v, k) <= cq_lo(v, k)) outside = true;
  }
  if (!empty && !outside) return true;
  long long a[16] = {v.slot, v.index};
  for (int k = 0; k < v.rank; k++) {
    a[2 + k] = v.origin[k];
    a[2 + v.rank + k] = empty ? v.ext[k] : v.dims[k];
  }
  cq_fault_n(empty ? site : site + 1, a, 2 + 2 * v.rank);
  return false;
}

/* *p = fn(*p) as one indivisible step (UPDATE, §7.1.3): lanes that update one element
   each see what the others left. On a GPU a compare-and-swap loop on the aligned word
   holding the element (fn may run more than once); on the CPU fibers never interleave
   inside it. */
/* cq_update of an element no other lane updates (its owner, croqvm/cuda/owner.py): a
   plain read and write. */
template <class S, class F> CQ_DEV void cq_update_owned(S *p, F fn) { *p = fn(*p); }

template <class S, class F> CQ_DEV void cq_update(S *p, F fn) {
#if defined(CQ_CPU)
  *p = fn(*p);
#else
  static_assert(sizeof(S) <= 8, "elements are at most 8 bytes");
  if constexpr (sizeof(S) == 8) {
    unsigned long long *w = (unsigned long long *)p, old = *w, seen;
    do {
      seen = old;
      S v, n;
      memcpy(&v, &seen, 8);
      n = fn(v);
      unsigned long long nw;
      memcpy(&nw, &n, 8);
      old = atomicCAS(w, seen, nw);
    } while (old != seen);
  } else {
    unsigned *w = (unsigned *)((uintptr_t)p & ~(uintptr_t)3);
    int shift = (int)((uintptr_t)p & 3) * 8;
    unsigned mask = sizeof(S) == 4 ? ~0u : ((1u << (8 * sizeof(S))) - 1u) << shift;
    unsigned old = *w, seen;
    do {
      seen = old;
      unsigned part = (seen & mask) >> shift;
      S v, n;
      memcpy(&v, &part, sizeof(S));
      n = fn(v);
      unsigned np = 0;
      memcpy(&np, &n, sizeof(S));
      old = atomicCAS(w, seen, (seen & ~mask) | ((np << shift) & mask));
    } while (old != seen);
  }
#endif
}

/* ------------------------------------------------------------------ run-time extents */

/* A shared buffer or fragment copy whose extents are known only at run time: allocated
   from the block's pool of shared memory the first time a lane reaches it (§3.2.4); the
   first lane claims it, fills it (`fill`: one element's bytes, zero for buffers) and
   publishes it, the others wait (lanes reaching it agree on the extents, §7.4.5). */
enum { CQ_DYN_NONE = 0, CQ_DYN_BUSY = 1, CQ_DYN_READY = 2, CQ_DYN_OVER_LIMIT = 3,
       CQ_DYN_NO_ROOM = 4 };

struct cq_dyn {
  unsigned state, off, used; /* state (CQ_DYN_*), byte offset, block's usage at failure */
  unsigned pad;
  long long dims[CQ_MAX_RANK];
  unsigned char fill[8];     /* fragments: the fill value until a tile gives a shape */
};

static_assert(sizeof(cq_dyn) <= 80, "croqvm/cuda/emit_kernel.py DYN_RECORD");

/* The block's pool: `top` is the next free byte offset, `end` the size of shared memory;
   `used` counts shared buffers as the engines' limit counts them (`account` bytes for
   this one), at most `limit`. Returns the state: CQ_DYN_READY, or why it failed. */
CQ_OUTLINED unsigned cq_dyn_alloc(cq_dyn *d, const long long *dims, int rank, int elem,
                                  long long count, long long account, unsigned char *smem,
                                  unsigned *top, unsigned end, unsigned *used, unsigned limit,
                                  int site) {
  if (d->state < CQ_DYN_READY && cq_atomic_cas(&d->state, CQ_DYN_NONE, CQ_DYN_BUSY) == 0) {
    long long n = count;
    for (int k = 0; k < rank; k++) n *= dims[k];
    long long bytes = (n * elem + 15) / 16 * 16;
    unsigned now = cq_atomic_add(used, (unsigned)account) + (unsigned)account;
    unsigned state = CQ_DYN_READY;
    unsigned at = 0;
    if (account && now > limit) {
      state = CQ_DYN_OVER_LIMIT;
    } else if (bytes > (long long)end) {
      state = CQ_DYN_NO_ROOM;
    } else {
      at = cq_atomic_add(top, (unsigned)bytes);
      if ((long long)at + bytes > (long long)end) state = CQ_DYN_NO_ROOM;
    }
    if (state == CQ_DYN_READY) {
      for (long long i = 0; i < n; i++)
        for (int b = 0; b < elem; b++) smem[at + i * elem + b] = d->fill[b];
      for (int k = 0; k < rank; k++) d->dims[k] = dims[k];
      d->off = at;
    }
    d->used = now;
    cq_flag_publish(&d->state, state);
    return state;
  }
  cq_flag_wait(&d->state, CQ_DYN_READY, site);
  return d->state;
}

/* A local buffer with run-time extents: the lane's own heap memory. */
struct cq_local_dyn {
  unsigned char *p;
  long long dims[CQ_MAX_RANK];
};

/* ------------------------------------------------------------------ DMA */

enum { CQ_DMA_COPY = 0, CQ_DMA_TRANSP = 1, CQ_DMA_PAD = 2 };

/* One DMA statement, resolved (§9.5, §9.6): source view, destination view (extents D),
   the tile T the operation makes of the source, and its parameters. */
struct cq_dma {
  cq_view src, dst;
  int op, zfill;
  int swz_src, swz_dst;   /* the swizzle of each side in bytes, 0: none (§9.7) */
  long long tile[CQ_MAX_RANK];
  int perm[CQ_MAX_RANK];
  long long pad_lo[CQ_MAX_RANK], pad_mid[CQ_MAX_RANK];
  unsigned char pad_value[8];
};

/* T: the extents the operation gives the source tile (permuted, or padded). */
CQ_OUTLINED void cq_dma_tile(cq_dma &d, const long long *pad_hi) {
  for (int k = 0; k < d.src.rank; k++) {
    long long e = d.src.ext[k];
    if (d.op == CQ_DMA_TRANSP) e = d.src.ext[d.perm[k]];
    if (d.op == CQ_DMA_PAD) e = d.pad_lo[k] + e + (e - 1) * d.pad_mid[k] + pad_hi[k];
    d.tile[k] = e;
  }
}

/* Whether T covers the destination (a larger T is cut to it, §9.5.1; a smaller one
   needs .zfill); else faults DMA_SHAPE (`site`) with both shapes. */
CQ_OUTLINED bool cq_dma_fits(const cq_dma &d, int site) {
  bool ok = true;
  for (int k = 0; k < d.src.rank; k++)
    if (!d.zfill && d.tile[k] < d.dst.ext[k]) ok = false;
  if (ok) return true;
  long long a[16] = {0};
  for (int k = 0; k < d.src.rank; k++) {
    a[k] = d.tile[k];
    a[d.src.rank + k] = d.dst.ext[k];
  }
  cq_fault_n(site, a, 2 * d.src.rank);
  return false;
}

/* The source element of tile element t, or null (outside the source, or padding: then
   *pad says which). */
CQ_DEV const unsigned char *cq_dma_source(const cq_dma &d, const long long *t, bool *pad) {
  long long i[CQ_MAX_RANK];
  *pad = false;
  for (int k = 0; k < d.src.rank; k++) {
    if (d.op == CQ_DMA_TRANSP) {
      i[d.perm[k]] = t[k];
    } else if (d.op == CQ_DMA_PAD) {
      long long x = t[k] - d.pad_lo[k], step = d.pad_mid[k] + 1;
      if (x < 0 || x % step || x / step >= d.src.ext[k]) {
        *pad = true;
        return 0;
      }
      i[k] = x / step;
    } else {
      i[k] = t[k];
    }
  }
  for (int k = 0; k < d.src.rank; k++)
    if (i[k] < cq_lo(d.src, k) || i[k] >= cq_hi(d.src, k)) return 0;
  return d.src.base + cq_swizzle(d.src, cq_offset(d.src, i), d.swz_src);
}

/* Destination element n (row-major in D) of a DMA: false when it lies outside its
   buffer; else *to, and *from the source element, or null (outside the source, or
   padding: then *pad says which). */
CQ_DEV bool cq_dma_element(const cq_dma &d, long long n, unsigned char **to,
                           const unsigned char **from, bool *pad) {
  const cq_view &v = d.dst;
  long long t[CQ_MAX_RANK], rest = n;
  bool in_tile = true;
  for (int k = v.rank - 1; k >= 0; k--) {
    t[k] = rest % v.ext[k];
    rest /= v.ext[k];
    if (t[k] < cq_lo(v, k) || t[k] >= cq_hi(v, k)) return false;
    if (t[k] >= d.tile[k]) in_tile = false;
  }
  *to = v.base + cq_swizzle(v, cq_offset(v, t), d.swz_dst);
  *pad = false;
  *from = in_tile ? cq_dma_source(d, t, pad) : 0;
  return true;
}

/* Moves the share `part` of `parts` of the DMA's elements (§9.5.1): every destination
   element in range inside T gets its source element (when that is in range; else 0
   with .zfill, else it stays), or the padding value; with .zfill the destination
   elements beyond T become 0. */
CQ_OUTLINED void cq_dma_move(const cq_dma &d, int part, int parts) {
  long long total = cq_elements(d.dst.ext, d.dst.rank);
  int elem = d.dst.elem;
  for (long long n = part; n < total; n += parts) {
    unsigned char *to;
    const unsigned char *from;
    bool pad;
    if (!cq_dma_element(d, n, &to, &from, &pad)) continue;
    if (from) {
      for (int b = 0; b < elem; b++) to[b] = from[b];
    } else if (pad) {
      for (int b = 0; b < elem; b++) to[b] = d.pad_value[b];
    } else if (d.zfill) {
      for (int b = 0; b < elem; b++) to[b] = 0;
    }
  }
}

/* cq_dma_move for an async copy of E-byte elements from global to shared memory:
   elements that come from the source go by cp.async and land when the lane waits for
   its copies (LANGUAGE.md §9.5.3); zeros are stored at once; the rest stays. */
template <int E> CQ_OUTLINED void cq_dma_move_async(const cq_dma &d, int part, int parts) {
  long long total = cq_elements(d.dst.ext, d.dst.rank);
  for (long long n = part; n < total; n += parts) {
    unsigned char *to;
    const unsigned char *from;
    bool pad;
    if (!cq_dma_element(d, n, &to, &from, &pad)) continue;
    if (from) cq_cp_async<E>(to, from, E);
    else if (d.zfill) for (int b = 0; b < E; b++) to[b] = 0;
  }
  cq_cp_async_commit();
}

/* Whether a copy from global into shared memory can go in 16-byte chunks (§9.7): a
   plain copy of a tile inside both buffers, filling its destination, whose rows are
   runs of whole 16-byte chunks at 16-byte aligned addresses on both sides. */
CQ_OUTLINED bool cq_dma_bulk_ok(const cq_dma &d) {
  const cq_view &s = d.src, &t = d.dst;
  if (d.op != CQ_DMA_COPY || s.elem != t.elem || s.rank != t.rank || !s.rank || s.strided ||
      t.strided)
    return false;
  for (int k = 0; k < s.rank; k++)
    if (d.tile[k] != t.ext[k] || s.origin[k] < 0 || s.origin[k] + s.ext[k] > s.dims[k] ||
        t.origin[k] < 0 || t.origin[k] + t.ext[k] > t.dims[k])
      return false;
  int last = s.rank - 1;
  long long run = s.ext[last] * s.elem;
  return run % 16 == 0 && (s.dims[last] * s.elem) % 16 == 0 &&
         (s.origin[last] * s.elem) % 16 == 0 && (t.dims[last] * t.elem) % 16 == 0 &&
         (t.origin[last] * t.elem) % 16 == 0 && (unsigned long long)s.base % 16 == 0 &&
         (unsigned long long)t.base % 16 == 0;
}

/* The share `part` of `parts` of the 16-byte chunks of a copy cq_dma_bulk_ok accepts, by
   cp.async (sm_80's way to a TMA load): each chunk to its place in the destination,
   swizzled or not; they land when the lane waits for its copies. */
CQ_OUTLINED void cq_dma_chunks_async(const cq_dma &d, int part, int parts) {
  const cq_view &s = d.src, &t = d.dst;
  int last = s.rank - 1;
  long long per_row = s.ext[last] * s.elem / 16, total = cq_elements(s.ext, last) * per_row;
  for (long long n = part; n < total; n += parts) {
    long long idx[CQ_MAX_RANK] = {0}, rest = n / per_row, c = n % per_row * 16;
    for (int k = last - 1; k >= 0; k--) {
      idx[k] = rest % s.ext[k];
      rest /= s.ext[k];
    }
    long long so = cq_offset(s, idx) + c, to = cq_offset(t, idx) + c;
    cq_cp_async<16>(t.base + cq_swizzle(t, to, d.swz_dst), s.base + so, 16);
  }
  cq_cp_async_commit();
}

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* Whether a copy goes as the tensor-map box (rows x cols) croqvm/cuda/emit_tma.py planned
   for it (§9.7): the map is usable (`ok`), the source tile is the box and lies inside its
   tensor unless the copy zero-fills (TMA fills the outside with zeros), and the
   destination is a whole shared buffer instance of the box's shape at an address aligned
   to `align`. */
CQ_DEV bool cq_tma_box_fits(const cq_dma &d, unsigned ok, long long rows, long long cols,
                            int zfill, unsigned align) {
  const cq_view &s = d.src, &t = d.dst;
  if (!ok || s.strided || t.strided || s.rank != 2 || t.rank != 2 ||
      (cq_smem_addr(t.base) & (align - 1)))
    return false;
  if (s.ext[0] != rows || s.ext[1] != cols || d.tile[0] != rows || d.tile[1] != cols ||
      t.origin[0] || t.origin[1] || t.ext[0] != rows || t.ext[1] != cols ||
      t.dims[0] != rows || t.dims[1] != cols)
    return false;
  return zfill || (s.origin[0] >= 0 && s.origin[1] >= 0 && s.origin[0] + rows <= s.dims[0] &&
                   s.origin[1] + cols <= s.dims[1]);
}

/* Issues the bulk copies of a copy cq_dma_bulk_ok accepts: one thread, one arrival on
   `bar` expecting the tile's bytes, then one copy per row, or per 16-byte chunk when the
   destination is swizzled (the swizzle moves whole chunks). */
CQ_OUTLINED void cq_dma_bulk(const cq_dma &d, cq_tma_bar *bar, int hint) {
  const cq_view &s = d.src, &t = d.dst;
  int last = s.rank - 1;
  long long rows = cq_elements(s.ext, last), run = s.ext[last] * s.elem;
  cq_fence_proxy_async();   /* ordinary stores to the destination come first */
  cq_tma_expect(bar, (unsigned)(rows * run));
  for (long long r = 0; r < rows; r++) {
    long long idx[CQ_MAX_RANK] = {0}, rest = r;
    for (int k = last - 1; k >= 0; k--) {
      idx[k] = rest % s.ext[k];
      rest /= s.ext[k];
    }
    long long so = cq_offset(s, idx), to = cq_offset(t, idx);
    if (!d.swz_dst) {
      cq_tma_load(t.base + to, s.base + so, (unsigned)run, bar, hint);
      continue;
    }
    for (long long c = 0; c < run; c += 16)
      cq_tma_load(t.base + cq_swizzle(t, to + c, d.swz_dst), s.base + so + c, 16, bar, hint);
  }
}
#endif

/* The first element of a tile outside its root in row-major order (§11.3.2): the
   origin itself when it lies outside, else the origin moved to the edge along the last
   dimension the tile overflows. Returns false when the tile lies inside. R, the view's
   rank, is known when compiling: unrolled, no array indexed at run time. */
template <int R> CQ_DEV bool cq_first_outside_r(const cq_view &v, long long (&at)[R]) {
  bool origin_out = false;
  int over = -1;
#pragma unroll
  for (int k = 0; k < R; k++) {
    if (v.origin[k] < 0 || v.origin[k] >= v.dims[k]) origin_out = true;
    if (v.origin[k] + v.ext[k] > v.dims[k]) over = k;
  }
#pragma unroll
  for (int k = 0; k < R; k++) at[k] = !origin_out && k == over ? v.dims[k] : v.origin[k];
  return origin_out || over >= 0;
}

/* ------------------------------------------------------------------ generic MMA */

/* One cell of C += A B (§11.3, §12.4): `acc` plus a(m, k) b(k, n) for k ascending, each
   step c + a b rounded once to C's type (`fmt`; integers wrap to C's type). `exact`: A
   and B are narrower than f64, so a b is exact in double. */
template <class C, class FA, class FB>
CQ_DEV C cq_mma_dot(C acc, const FA &a, const FB &b, int m, int n, int K, int fmt,
                    int exact) {
  for (int k = 0; k < K; k++) {
    const auto av = a(m, k);
    const auto bv = b(k, n);
    if constexpr (std::is_integral<C>::value)
      acc = (C)((unsigned long long)acc + (unsigned long long)((long long)av * (long long)bv));
    else
      acc = (C)cq_fma_to((double)acc, (double)av, (double)bv, fmt, exact);
  }
  return acc;
}

/* The share `part` of `parts` of the cells of C [M, N] += A B, row-major in `c`; a(m, k)
   and b(k, n) read the operands. */
template <class C, class FA, class FB>
CQ_DEV void cq_mma_cells_at(C *c, const FA &a, const FB &b, int M, int N, int K, int fmt,
                            int exact, int part, int parts) {
  for (int cell = part; cell < M * N; cell += parts)
    c[cell] = cq_mma_dot(c[cell], a, b, cell / N, cell % N, K, fmt, exact);
}

/* cq_mma_cells_at over operands stored as arrays: A [M, K] for layouts 0, 1 (row) and
   [K, M] for 2, 3; B [N, K] for layouts 0, 2 and [K, N] for 1, 3. */
template <class C, class A, class B>
CQ_OUTLINED void cq_mma_cells(C *c, const A *a, const B *b, int M, int N, int K, int layout,
                         int fmt, int exact, int part, int parts) {
  cq_mma_cells_at(
      c, [&](int m, int k) { return layout < 2 ? a[m * K + k] : a[k * M + m]; },
      [&](int k, int n) { return (layout & 1) ? b[k * N + n] : b[n * K + k]; }, M, N, K, fmt,
      exact, part, parts);
}

#endif /* CQ_KERNEL_H */
