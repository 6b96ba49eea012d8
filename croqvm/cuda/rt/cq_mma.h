/* Warp-level tensor-core shapes (mma.sync, LANGUAGE.md §11.4 `group` level) and their
 * PTX fragment layouts, shared by the GPU implementation (cq_gpu.cuh) and the CPU
 * emulation (cq_cpu.h).
 *
 * Each of the 32 lanes of a warp holds NA elements of A [M, K], NB of B [K, N] and NC of
 * C/D [M, N]; the maps below say which (lane, element) holds which matrix entry. They
 * are one formula for every shape (tinygrad's a_elem/b_elem/c_map idea: layouts are
 * data, the arithmetic is written once). With g = lane / 4, t = lane % 4 and w the
 * elements packed in one 32-bit register (2 for 16-bit types, 4 for 8-bit, 1 for tf32
 * and f64), A and B are built from 8 x 4w "core" blocks, one register per lane each:
 *
 *   A (row-major .row): register r = i / w covers rows 8 (r % 2) .. +8 and columns
 *       4w (r / 2) .. +4w; lane (g, t) holds row g, columns t w .. t w + w - 1 of it.
 *   B (column-major .col): register r covers k = 4w r .. +4w; lane (g, t) holds
 *       column n = g, k = t w .. t w + w - 1 of it.
 *   C, D: element i of lane (g, t) is row g + 8 (i / 2), column 2 t + i % 2.
 *
 * This reproduces the PTX ISA figures ("Matrix fragments for mma.m16n8k16" etc.), and
 * the m8 shapes (m8n8k16 s8, m8n8k4 f64) are the first register of their m16 cousins.
 * Values travel as the C type of their croqvm type (f16, bf16 and tf32 as float that
 * is already rounded to the type, 8-bit integers as int), so the generated code never
 * sees packed registers.
 */
#ifndef CQ_MMA_H
#define CQ_MMA_H

/* Element types: the C value type, elements per 32-bit register, PTX type name. */
struct cq_f16 { typedef float value; enum { W = 2, INT = 0 }; };
struct cq_bf16 { typedef float value; enum { W = 2, INT = 0 }; };
struct cq_tf32 { typedef float value; enum { W = 1, INT = 0 }; };
struct cq_f32 { typedef float value; enum { W = 1, INT = 0 }; };
struct cq_f64 { typedef double value; enum { W = 1, INT = 0 }; };
struct cq_s8 { typedef int value; enum { W = 4, INT = 1 }; };
struct cq_u8 { typedef int value; enum { W = 4, INT = 1 }; };
struct cq_s32 { typedef int value; enum { W = 1, INT = 1 }; };

template <int M_, int N_, int K_, class TA, class TB, class TC> struct cq_mma_shape {
  enum { M = M_, N = N_, K = K_, NA = M_ * K_ / 32, NB = K_ * N_ / 32, NC = M_ * N_ / 32 };
  typedef TA ta;
  typedef TB tb;
  typedef TC tc;
  typedef typename TA::value a_value;
  typedef typename TB::value b_value;
  typedef typename TC::value c_value;
};

/* Every shape the runtime provides: name, M, N, K, A, B and C/D types. */
#define CQ_MMA_SHAPES(X)                                                                \
  X(m16n8k16_f16_f32, 16, 8, 16, cq_f16, cq_f16, cq_f32)                                \
  X(m16n8k8_f16_f32, 16, 8, 8, cq_f16, cq_f16, cq_f32)                                  \
  X(m16n8k16_bf16_f32, 16, 8, 16, cq_bf16, cq_bf16, cq_f32)                             \
  X(m16n8k8_bf16_f32, 16, 8, 8, cq_bf16, cq_bf16, cq_f32)                               \
  X(m16n8k8_tf32_f32, 16, 8, 8, cq_tf32, cq_tf32, cq_f32)                               \
  X(m16n8k4_tf32_f32, 16, 8, 4, cq_tf32, cq_tf32, cq_f32)                               \
  X(m16n8k32_s8_s8_s32, 16, 8, 32, cq_s8, cq_s8, cq_s32)                                \
  X(m16n8k32_s8_u8_s32, 16, 8, 32, cq_s8, cq_u8, cq_s32)                                \
  X(m16n8k32_u8_s8_s32, 16, 8, 32, cq_u8, cq_s8, cq_s32)                                \
  X(m16n8k32_u8_u8_s32, 16, 8, 32, cq_u8, cq_u8, cq_s32)                                \
  X(m16n8k16_s8_s8_s32, 16, 8, 16, cq_s8, cq_s8, cq_s32)                                \
  X(m16n8k16_s8_u8_s32, 16, 8, 16, cq_s8, cq_u8, cq_s32)                                \
  X(m16n8k16_u8_s8_s32, 16, 8, 16, cq_u8, cq_s8, cq_s32)                                \
  X(m16n8k16_u8_u8_s32, 16, 8, 16, cq_u8, cq_u8, cq_s32)                                \
  X(m8n8k16_s8_s8_s32, 8, 8, 16, cq_s8, cq_s8, cq_s32)                                  \
  X(m8n8k16_s8_u8_s32, 8, 8, 16, cq_s8, cq_u8, cq_s32)                                  \
  X(m8n8k16_u8_s8_s32, 8, 8, 16, cq_u8, cq_s8, cq_s32)                                  \
  X(m8n8k16_u8_u8_s32, 8, 8, 16, cq_u8, cq_u8, cq_s32)                                  \
  X(m8n8k4_f64_f64, 8, 8, 4, cq_f64, cq_f64, cq_f64)

#define CQ_MMA_TYPEDEF(name, m, n, k, a, b, c) typedef cq_mma_shape<m, n, k, a, b, c> cq_mma_##name;
CQ_MMA_SHAPES(CQ_MMA_TYPEDEF)
#undef CQ_MMA_TYPEDEF

/* The maps; `w` is the element type's W. */
CQ_HD int cq_mma_a_row(int w, int lane, int i) { return lane / 4 + 8 * ((i / w) % 2); }
CQ_HD int cq_mma_a_col(int w, int lane, int i) {
  return (lane % 4) * w + i % w + 4 * w * (i / (2 * w));
}
CQ_HD int cq_mma_b_row(int w, int lane, int i) {
  return (lane % 4) * w + i % w + 4 * w * (i / w);
}
CQ_HD int cq_mma_b_col(int lane) { return lane / 4; }
CQ_HD int cq_mma_c_row(int lane, int i) { return lane / 4 + 8 * (i / 2); }
CQ_HD int cq_mma_c_col(int lane, int i) { return (lane % 4) * 2 + i % 2; }

/* Accumulators in registers (LANGUAGE.md §11.7): lane l of a warp holds element (i, j)
 * of a warp's accumulator when i % 8 == l / 4 and (j % 8) / 2 == l % 4 (the C map above,
 * repeated over the tile); in a warpgroup's, warp w holds the rows with (i / 16) % 4 == w
 * (wgmma's D map). The lane keeps its elements in an array, slot
 * ((row band) * nb + j / 8) * 2 + j % 2 with nb = ceil(N / 8) column chunks and row band
 * i / 8 (a warp) or 2 (i / 64) + (i / 8) % 2 (a warpgroup); slots past the tile's edge
 * hold nothing. `unit` is 32 or 128, `rank` the lane's rank in its unit. */
CQ_HD int cq_frag_slots(int unit, int rows, int cols) {
  const int nb = (cols + 7) / 8;
  return (unit == 32 ? (rows + 7) / 8 : 2 * ((rows + 63) / 64)) * nb * 2;
}
CQ_HD int cq_frag_slot(int unit, int i, int j, int cols) {
  const int band = unit == 32 ? i / 8 : 2 * (i / 64) + (i / 8) % 2;
  return (band * ((cols + 7) / 8) + j / 8) * 2 + j % 2;
}
/* cq_frag_slot of C element i (cq_mma_c_row/col) of the mma.sync tile at (mt, nt), both
   multiples of 8: whatever the lane, that element's row band counts from mt / 8 + i / 2
   and its column chunk is nt / 8, so the slot is a constant where mt, nt and i are (the
   accumulator then stays in registers). */
CQ_HD int cq_frag_tile_slot(int unit, int mt, int nt, int i, int cols) {
  const int b = mt / 8 + i / 2, band = unit == 32 ? b : 2 * (b / 8) + b % 2;
  return (band * ((cols + 7) / 8) + nt / 8) * 2 + i % 2;
}
/* The same for a warpgroup's tile at mt = 64 mj + 16 w + 8 h, w the lane's warp and h
   the 8-row half of its 16-row band (h is 0 for m16 tiles, and i / 2 is 0 for m8 ones):
   row band 2 mj + (h + i / 2) % 2 whatever the warp. */
CQ_HD int cq_frag_wg_slot(int mj, int h, int nt, int i, int cols) {
  return ((2 * mj + (h + i / 2) % 2) * ((cols + 7) / 8) + nt / 8) * 2 + i % 2;
}
CQ_HD int cq_frag_row(int unit, int rank, int s, int cols) {
  const int band = s / (2 * ((cols + 7) / 8)), g = (rank % 32) / 4;
  return unit == 32 ? 8 * band + g : 64 * (band / 2) + 16 * (rank / 32) + 8 * (band % 2) + g;
}
CQ_HD int cq_frag_col(int rank, int s, int cols) {
  return 8 * ((s / 2) % ((cols + 7) / 8)) + 2 * (rank % 4) + s % 2;
}

#endif /* CQ_MMA_H */
