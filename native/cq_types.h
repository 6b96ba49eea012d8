/* Element types as the engine computes with them (LANGUAGE.md §12; croqvm/core/dtypes.py is
 * the table, native/cq_numerics.h the numbers: every rounding, wrap and fault below is
 * one of its functions).
 *
 * Each type NAME has:
 *   ST_NAME  its storage type (a register lane or a buffer element): bf16, tf32 and fp8
 *            are stored as float, f16 as its bit pattern, bool as one byte;
 *   CT_NAME  the type the operations of §12.2 compute in: narrow integers promote to s32,
 *            tf32 and fp8 to f32, f16 and bf16 compute in f64 and round once;
 *   NT_NAME  the cq_numerics.h suffix of the integer type CT is (s32, u32, s64, u64);
 *   PT_NAME  the promoted type as an enum cq_type (shift counts are checked against it);
 *   LD_NAME(s)  a stored value as CT;  SV_NAME(v)  a CT value rounded/wrapped into ST;
 *   NEG_NAME(s) a float's negation on its storage (§12: NEG flips the sign, no rounding).
 * The X-lists say which types an opcode family is instantiated for.
 */
#ifndef CQ_TYPES_H
#define CQ_TYPES_H

#include <stdint.h>
#include "cq_numerics.h"

#define ST_BOOL uint8_t
#define CT_BOOL int32_t
#define LD_BOOL(s) ((int32_t)((s) != 0))
#define SV_BOOL(v) ((uint8_t)((v) != 0))

/* integers: widening is exact, narrowing wraps (casts to narrower signed types wrap
 * modulo 2^n on every compiler croqvm supports, as cq_numerics.h assumes) */
#define ST_S8 int8_t
#define ST_S16 int16_t
#define ST_S32 int32_t
#define ST_S64 int64_t
#define ST_U8 uint8_t
#define ST_U16 uint16_t
#define ST_U32 uint32_t
#define ST_U64 uint64_t
#define CT_S8 int32_t
#define CT_S16 int32_t
#define CT_S32 int32_t
#define CT_S64 int64_t
#define CT_U8 int32_t
#define CT_U16 int32_t
#define CT_U32 uint32_t
#define CT_U64 uint64_t
#define NT_S8 s32
#define NT_S16 s32
#define NT_S32 s32
#define NT_S64 s64
#define NT_U8 s32
#define NT_U16 s32
#define NT_U32 u32
#define NT_U64 u64
#define PT_S8 CQ_DT_S32
#define PT_S16 CQ_DT_S32
#define PT_S32 CQ_DT_S32
#define PT_S64 CQ_DT_S64
#define PT_U8 CQ_DT_S32
#define PT_U16 CQ_DT_S32
#define PT_U32 CQ_DT_U32
#define PT_U64 CQ_DT_U64
#define LD_S8(s) ((int32_t)(s))
#define LD_S16(s) ((int32_t)(s))
#define LD_S32(s) (s)
#define LD_S64(s) (s)
#define LD_U8(s) ((int32_t)(s))
#define LD_U16(s) ((int32_t)(s))
#define LD_U32(s) (s)
#define LD_U64(s) (s)
#define SV_S8(v) ((int8_t)(v))
#define SV_S16(v) ((int16_t)(v))
#define SV_S32(v) (v)
#define SV_S64(v) (v)
#define SV_U8(v) ((uint8_t)(v))
#define SV_U16(v) ((uint16_t)(v))
#define SV_U32(v) (v)
#define SV_U64(v) (v)

/* the sub-byte integers: a byte holding a value of the type; storing wraps to the width
 * (the low bits, sign-extended for a signed type: cq_wrap_bits) */
#define ST_S2 int8_t
#define ST_U2 uint8_t
#define ST_S4 int8_t
#define ST_U4 uint8_t
#define ST_S6 int8_t
#define ST_U6 uint8_t
#define ST_U1 uint8_t
#define CT_S2 int32_t
#define CT_U2 int32_t
#define CT_S4 int32_t
#define CT_U4 int32_t
#define CT_S6 int32_t
#define CT_U6 int32_t
#define CT_U1 int32_t
#define NT_S2 s32
#define NT_U2 s32
#define NT_S4 s32
#define NT_U4 s32
#define NT_S6 s32
#define NT_U6 s32
#define NT_U1 s32
#define PT_S2 CQ_DT_S32
#define PT_U2 CQ_DT_S32
#define PT_S4 CQ_DT_S32
#define PT_U4 CQ_DT_S32
#define PT_S6 CQ_DT_S32
#define PT_U6 CQ_DT_S32
#define PT_U1 CQ_DT_S32
#define LD_S2(s) ((int32_t)(s))
#define LD_U2(s) ((int32_t)(s))
#define LD_S4(s) ((int32_t)(s))
#define LD_U4(s) ((int32_t)(s))
#define LD_S6(s) ((int32_t)(s))
#define LD_U6(s) ((int32_t)(s))
#define LD_U1(s) ((int32_t)(s))
#define SV_S2(v) ((int8_t)cq_wrap_bits((int64_t)(v), 2, 1))
#define SV_U2(v) ((uint8_t)cq_wrap_bits((int64_t)(v), 2, 0))
#define SV_S4(v) ((int8_t)cq_wrap_bits((int64_t)(v), 4, 1))
#define SV_U4(v) ((uint8_t)cq_wrap_bits((int64_t)(v), 4, 0))
#define SV_S6(v) ((int8_t)cq_wrap_bits((int64_t)(v), 6, 1))
#define SV_U6(v) ((uint8_t)cq_wrap_bits((int64_t)(v), 6, 0))
#define SV_U1(v) ((uint8_t)cq_wrap_bits((int64_t)(v), 1, 0))

#define ST_F16 uint16_t
#define CT_F16 double
#define LD_F16(s) cq_f16_value(s)
#define SV_F16(v) cq_f16_bits(v)
#define NEG_F16(s) ((uint16_t)((s) ^ 0x8000u))
#define ST_BF16 float
#define CT_BF16 double
#define LD_BF16(s) ((double)(s))
#define SV_BF16(v) ((float)cq_round_bf16(v))
#define NEG_BF16(s) (-(s))
#define ST_F32 float
#define CT_F32 float
#define LD_F32(s) (s)
#define SV_F32(v) ((float)(v))
#define NEG_F32(s) (-(s))
#define ST_F64 double
#define CT_F64 double
#define LD_F64(s) (s)
#define SV_F64(v) ((double)(v))
#define NEG_F64(s) (-(s))
#define ST_TF32 float
#define CT_TF32 float
#define LD_TF32(s) (s)
#define SV_TF32(v) ((float)cq_round_tf32((double)(v)))
#define NEG_TF32(s) (-(s))
#define ST_F8_E4M3 float
#define CT_F8_E4M3 float
#define LD_F8_E4M3(s) (s)
#define SV_F8_E4M3(v) ((float)cq_round_e4m3((double)(v)))
#define NEG_F8_E4M3(s) (-(s))
#define ST_F8_E5M2 float
#define CT_F8_E5M2 float
#define LD_F8_E5M2(s) (s)
#define SV_F8_E5M2(v) ((float)cq_round_e5m2((double)(v)))
#define NEG_F8_E5M2(s) (-(s))

/* the OCP MX formats: stored as their bit pattern, like f16 (no operation computes in
 * them: NEG's sign flip is there for the family's sake) */
#define ST_F6_E2M3 uint8_t
#define CT_F6_E2M3 double
#define LD_F6_E2M3(s) cq_mx_value(s, CQ_FMT_F6_E2M3)
#define SV_F6_E2M3(v) ((uint8_t)cq_mx_bits(v, CQ_FMT_F6_E2M3))
#define NEG_F6_E2M3(s) ((uint8_t)((s) ^ 0x20u))
#define ST_F6_E3M2 uint8_t
#define CT_F6_E3M2 double
#define LD_F6_E3M2(s) cq_mx_value(s, CQ_FMT_F6_E3M2)
#define SV_F6_E3M2(v) ((uint8_t)cq_mx_bits(v, CQ_FMT_F6_E3M2))
#define NEG_F6_E3M2(s) ((uint8_t)((s) ^ 0x20u))
#define ST_F4_E2M1 uint8_t
#define CT_F4_E2M1 double
#define LD_F4_E2M1(s) cq_mx_value(s, CQ_FMT_F4_E2M1)
#define SV_F4_E2M1(v) ((uint8_t)cq_mx_bits(v, CQ_FMT_F4_E2M1))
#define NEG_F4_E2M1(s) ((uint8_t)((s) ^ 0x08u))
#define ST_F8_UE8M0 uint8_t
#define CT_F8_UE8M0 double
#define LD_F8_UE8M0(s) cq_mx_value(s, CQ_FMT_UE8M0)
#define SV_F8_UE8M0(v) ((uint8_t)cq_mx_bits(v, CQ_FMT_UE8M0))
#define NEG_F8_UE8M0(s) (s)
#define ST_F8_UE4M3 uint8_t
#define CT_F8_UE4M3 double
#define LD_F8_UE4M3(s) cq_mx_value(s, CQ_FMT_UE4M3)
#define SV_F8_UE4M3(v) ((uint8_t)cq_mx_bits(v, CQ_FMT_UE4M3))
#define NEG_F8_UE4M3(s) (s)

/* Families: X(NAME) for each type the family covers. */
#define CQ_INT_TYPES(X) X(S8) X(S16) X(S32) X(S64) X(U8) X(U16) X(U32) X(U64) \
    X(S2) X(U2) X(S4) X(U4) X(S6) X(U6) X(U1)
#define CQ_FLOAT_TYPES(X) X(F16) X(BF16) X(F32) X(F64) X(TF32) X(F8_E4M3) X(F8_E5M2) \
    X(F6_E2M3) X(F6_E3M2) X(F4_E2M1) X(F8_UE8M0) X(F8_UE4M3)
#define CQ_NUM_TYPES(X) CQ_INT_TYPES(X) CQ_FLOAT_TYPES(X)
#define CQ_ALL_TYPES(X) X(BOOL) CQ_NUM_TYPES(X)

/* cq_numerics.h's float format of a float type (enum cq_type -> CQ_FMT_*). */
static inline int cq_fmt_of(int type)
{
    switch (type) {
    case CQ_DT_F32: return CQ_FMT_F32;
    case CQ_DT_F16: return CQ_FMT_F16;
    case CQ_DT_BF16: return CQ_FMT_BF16;
    case CQ_DT_TF32: return CQ_FMT_TF32;
    case CQ_DT_F8_E4M3: return CQ_FMT_E4M3;
    case CQ_DT_F8_E5M2: return CQ_FMT_E5M2;
    case CQ_DT_F6_E2M3: return CQ_FMT_F6_E2M3;
    case CQ_DT_F6_E3M2: return CQ_FMT_F6_E3M2;
    case CQ_DT_F4_E2M1: return CQ_FMT_F4_E2M1;
    case CQ_DT_F8_UE8M0: return CQ_FMT_UE8M0;
    case CQ_DT_F8_UE4M3: return CQ_FMT_UE4M3;
    default: return CQ_FMT_F64;
    }
}

static inline int cq_is_float(int type)
{
    return type >= CQ_DT_F16 && type <= CQ_DT_F8_UE4M3;
}

#endif
