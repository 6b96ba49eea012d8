/* Warpgroup tensor-core shapes (wgmma.mma_async on sm_90a, LANGUAGE.md §11.4 `group-4`
 * level), their operand layout in shared memory, matrix descriptors and accumulator
 * fragments, shared by the GPU implementation (cq_gpu.cuh) and the CPU emulation
 * (cq_cpu.h). PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate".
 *
 * One instruction computes D [64, N] += A [64, K] B [K, N] for the 128 threads of a
 * warpgroup; K is 32 bytes of the operand type (16 f16/bf16, 8 tf32, 32 8-bit). A and
 * B are read from shared memory through 64-bit matrix descriptors; croqvm stages both
 * K-major (no transposition bits: the only major-ness 8-bit types allow) without
 * swizzling, in the canonical layout ((8, m), (T, 2k)) : ((1T, SBO), (1, LBO)) with T the
 * elements per 16 bytes:
 *   - a core matrix is 8 rows (of M or N) by 16 bytes of K, 128 contiguous bytes, row r
 *     at 16 r;
 *   - core matrices of the next 8 rows follow at SBO = 128 bytes;
 *   - the next 16 bytes of K start LBO = 16 * rows bytes further (a slab per 16 bytes).
 * So element (row, k) of a staged [rows, K] operand is at cq_wgmma_offset below, and
 * the instruction for K columns kt.. starts 2 slabs (32 bytes of K) per step further.
 * Tiles a TMA copy laid out 128B-swizzled are read where they lie instead
 * (cq_wgmma_desc_sw128).
 *
 * The accumulator lives in registers: thread t of the warpgroup holds N / 2 values,
 * value i at row 16 (t / 32) + (t % 32) / 4 + 8 ((i / 2) % 2), column 8 (i / 4) +
 * 2 (t % 4) + i % 2 (the m64nNk* "Accumulator D" figures).
 *
 * croqvm issues N = 8, 16, 32 or 64 per instruction (larger tiles are several
 * instructions), which every operand type allows.
 */
#ifndef CQ_WGMMA_H
#define CQ_WGMMA_H

#include "cq_numerics.h"

/* 8-bit floats, as cq_mma.h's element types: C value type, elements per register. */
struct cq_e4m3 { typedef float value; enum { W = 4, INT = 0 }; };
struct cq_e5m2 { typedef float value; enum { W = 4, INT = 0 }; };

template <int N_, class TA, class TB, class TC> struct cq_wgmma_shape {
  enum { M = 64, N = N_, K = 8 * TA::W, BYTES = 4 / TA::W, ND = N_ / 2,
         A_BYTES = 64 * K * BYTES, B_BYTES = N_ * K * BYTES };
  typedef TA ta;
  typedef TB tb;
  typedef TC tc;
  typedef typename TC::value c_value;
};

/* Operand types: name, A, B, accumulator types, K, the PTX type suffix, the
   immediates after scale-d (scale-a, scale-b and, for 16-bit types, both transposition
   bits), the accumulator's asm constraint. */
#define CQ_WGMMA_TYPES(X, n)                                                            \
  X(n, f16_f32, cq_f16, cq_f16, cq_f32, 16, "f32.f16.f16", ", 1, 1, 0, 0", "f")          \
  X(n, bf16_f32, cq_bf16, cq_bf16, cq_f32, 16, "f32.bf16.bf16", ", 1, 1, 0, 0", "f")     \
  X(n, tf32_f32, cq_tf32, cq_tf32, cq_f32, 8, "f32.tf32.tf32", ", 1, 1", "f")            \
  X(n, e4m3_f32, cq_e4m3, cq_e4m3, cq_f32, 32, "f32.e4m3.e4m3", ", 1, 1", "f")           \
  X(n, e5m2_f32, cq_e5m2, cq_e5m2, cq_f32, 32, "f32.e5m2.e5m2", ", 1, 1", "f")           \
  X(n, s8_s8_s32, cq_s8, cq_s8, cq_s32, 32, "s32.s8.s8", "", "r")                        \
  X(n, s8_u8_s32, cq_s8, cq_u8, cq_s32, 32, "s32.s8.u8", "", "r")                        \
  X(n, u8_s8_s32, cq_u8, cq_s8, cq_s32, 32, "s32.u8.s8", "", "r")                        \
  X(n, u8_u8_s32, cq_u8, cq_u8, cq_s32, 32, "s32.u8.u8", "", "r")

/* Every shape: the types at each N croqvm issues. */
#define CQ_WGMMA_SHAPES(X)                                                              \
  CQ_WGMMA_TYPES(X, 8) CQ_WGMMA_TYPES(X, 16) CQ_WGMMA_TYPES(X, 32) CQ_WGMMA_TYPES(X, 64)  \
  CQ_WGMMA_TYPES(X, 128) CQ_WGMMA_TYPES(X, 256)

#define CQ_WGMMA_TYPEDEF(n, name, a, b, c, k, ptx, imm, cc)                             \
  typedef cq_wgmma_shape<n, a, b, c> cq_wgmma_n##n##_##name;
CQ_WGMMA_SHAPES(CQ_WGMMA_TYPEDEF)
#undef CQ_WGMMA_TYPEDEF

/* The accumulator fragment map; t is the thread's rank in its warpgroup. */
CQ_HD int cq_wgmma_d_row(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2); }
CQ_HD int cq_wgmma_d_col(int t, int i) { return 8 * (i / 4) + 2 * (t % 4) + i % 2; }

/* Byte offset of element (row, k) of a [rows, K] operand staged K-major as above. */
CQ_HD int cq_wgmma_offset(int row, int k, int rows, int bytes) {
  return (k * bytes / 16) * (16 * rows) + (row / 8) * 128 + (row % 8) * 16 + (k * bytes) % 16;
}
CQ_HD unsigned cq_wgmma_lbo(int rows) { return 16u * (unsigned)rows; }
enum { CQ_WGMMA_SBO = 128, CQ_WGMMA_STEP_SLABS = 2 };

/* The matrix descriptor: start address, leading and stride byte offsets, each as
   (x & 0x3FFFF) >> 4; base offset 0 and swizzle mode 0 (none). `addr` is the shared
   memory address (cq_smem_addr). */
CQ_HD unsigned long long cq_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) |
         (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 |
         (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32;
}

/* The descriptor of a K-major operand read where it lies, in the 128-byte swizzled
   layout a swizzled TMA copy writes (PTX ISA "Shared memory matrix layout", K-major
   128B swizzling): rows of 128 bytes, each 1024-byte group of 8 rows an atom whose
   16-byte chunk c of row r lies at chunk c ^ r; `addr` is the shared address of the
   first row's first K element (atoms 1024-byte aligned, base offset 0, so advancing K
   moves the start within the row), the stride byte offset one atom, the leading byte
   offset unused (1), swizzle mode 1 (128 bytes) in bits 62-63. */
CQ_HD unsigned long long cq_wgmma_desc_sw128(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | 1ull << 16 |
         (unsigned long long)(1024u >> 4) << 32 | 1ull << 62;
}
/* Staging: the operand element `v` (a value of the type) at `p` in its PTX encoding,
   and back (the CPU emulation reads the operands as the tensor core would). */
template <class T> struct cq_wgmma_elem;
template <> struct cq_wgmma_elem<cq_f16> {
  CQ_HD void put(unsigned char *p, float v) { *(uint16_t *)p = cq_f16_bits(v); }
  CQ_HD double get(const unsigned char *p) { return cq_f16_value(*(const uint16_t *)p); }
};
template <> struct cq_wgmma_elem<cq_bf16> {
  CQ_HD void put(unsigned char *p, float v) { *(uint16_t *)p = cq_bf16_bits(v); }
  CQ_HD double get(const unsigned char *p) { return cq_bf16_value(*(const uint16_t *)p); }
};
/* a tf32 value is an f32 whose low 13 mantissa bits are 0 (§12.3) */
template <> struct cq_wgmma_elem<cq_tf32> {
  CQ_HD void put(unsigned char *p, float v) { *(uint32_t *)p = cq_f32_bits(v); }
  CQ_HD double get(const unsigned char *p) { return cq_f32_from_bits(*(const uint32_t *)p); }
};
template <> struct cq_wgmma_elem<cq_e4m3> {
  CQ_HD void put(unsigned char *p, float v) { *p = cq_fp8_bits(v, CQ_FMT_E4M3); }
  CQ_HD double get(const unsigned char *p) { return cq_fp8_value(*p, CQ_FMT_E4M3); }
};
template <> struct cq_wgmma_elem<cq_e5m2> {
  CQ_HD void put(unsigned char *p, float v) { *p = cq_fp8_bits(v, CQ_FMT_E5M2); }
  CQ_HD double get(const unsigned char *p) { return cq_fp8_value(*p, CQ_FMT_E5M2); }
};
template <> struct cq_wgmma_elem<cq_s8> {
  CQ_HD void put(unsigned char *p, int v) { *(int8_t *)p = (int8_t)v; }
  CQ_HD double get(const unsigned char *p) { return *(const int8_t *)p; }
};
template <> struct cq_wgmma_elem<cq_u8> {
  CQ_HD void put(unsigned char *p, int v) { *p = (unsigned char)v; }
  CQ_HD double get(const unsigned char *p) { return *p; }
};

#endif /* CQ_WGMMA_H */
