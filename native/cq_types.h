/* Element types as the engine computes with them (LANGUAGE.md §12; croqvm/dtypes.py is
 * the table, croqvm/interp/scalar.py the reference).
 *
 * Each type NAME has:
 *   ST_NAME  its storage type (what a register lane or a buffer element holds);
 *   CT_NAME  the type the operations of §12.2 compute in: narrow integers promote to s32,
 *            tf32 and fp8 to f32 (§12.2), f16 and bf16 compute exactly in f64;
 *   UT_NAME  the unsigned type of CT's width (modular arithmetic, §12.3.1: C leaves signed
 *            overflow undefined, so + - * << are done on unsigned bits);
 *   LD_NAME(s)  a stored value as CT;  SV_NAME(v)  a CT value rounded/wrapped into ST;
 *   BITS_NAME   CT's width (shift counts are checked against it), SIGNED_NAME.
 * The X-lists say which types an opcode family is instantiated for.
 */
#ifndef CQ_TYPES_H
#define CQ_TYPES_H

#include <math.h>
#include <stdint.h>

#define ST_BOOL uint8_t
#define CT_BOOL int32_t
#define UT_BOOL uint32_t
#define LD_BOOL(s) ((int32_t)((s) != 0))
#define SV_BOOL(v) ((uint8_t)((v) != 0))
#define BITS_BOOL 32
#define SIGNED_BOOL 1

#define ST_S8 int8_t
#define CT_S8 int32_t
#define UT_S8 uint32_t
#define BITS_S8 32
#define SIGNED_S8 1
#define ST_S16 int16_t
#define CT_S16 int32_t
#define UT_S16 uint32_t
#define BITS_S16 32
#define SIGNED_S16 1
#define ST_S32 int32_t
#define CT_S32 int32_t
#define UT_S32 uint32_t
#define BITS_S32 32
#define SIGNED_S32 1
#define ST_S64 int64_t
#define CT_S64 int64_t
#define UT_S64 uint64_t
#define BITS_S64 64
#define SIGNED_S64 1
#define ST_U8 uint8_t
#define CT_U8 int32_t
#define UT_U8 uint32_t
#define BITS_U8 32
#define SIGNED_U8 1
#define ST_U16 uint16_t
#define CT_U16 int32_t
#define UT_U16 uint32_t
#define BITS_U16 32
#define SIGNED_U16 1
#define ST_U32 uint32_t
#define CT_U32 uint32_t
#define UT_U32 uint32_t
#define BITS_U32 32
#define SIGNED_U32 0
#define ST_U64 uint64_t
#define CT_U64 uint64_t
#define UT_U64 uint64_t
#define BITS_U64 64
#define SIGNED_U64 0
/* integers: widening is exact, narrowing wraps (gcc converts modulo 2^n) */
/* the type §12.2 promotes to (shift counts are checked against its width) */
#define PT_S8 CQ_S32
#define PT_S16 CQ_S32
#define PT_S32 CQ_S32
#define PT_S64 CQ_S64
#define PT_U8 CQ_S32
#define PT_U16 CQ_S32
#define PT_U32 CQ_U32
#define PT_U64 CQ_U64
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

#define ST_F32 float
#define CT_F32 float
#define LD_F32(s) (s)
#define SV_F32(v) (v)
#define ST_F64 double
#define CT_F64 double
#define LD_F64(s) (s)
#define SV_F64(v) (v)

/* Families: X(NAME) for each type the family covers. */
#define CQ_INT_TYPES(X) X(S8) X(S16) X(S32) X(S64) X(U8) X(U16) X(U32) X(U64)
#define CQ_FLOAT_TYPES(X) X(F32) X(F64)
#define CQ_NUM_TYPES(X) CQ_INT_TYPES(X) CQ_FLOAT_TYPES(X)
#define CQ_BITS_TYPES(X) X(BOOL) CQ_INT_TYPES(X)
#define CQ_ALL_TYPES(X) X(BOOL) CQ_NUM_TYPES(X)

/* Whether a type has handlers here (the driver refuses modules using the others). */
#define CQ_TYPE_ONE(N) | (1u << CQ_##N)
#define CQ_SUPPORTED_TYPES (0u CQ_ALL_TYPES(CQ_TYPE_ONE))

/* MIN and MAX (PLAN.md decision): a NaN operand is ignored, equal operands (+0, -0
 * included) give the first. Integers never take the NaN branches. */
#define CQ_MIN(x, y) ((x) != (x) ? (y) : (y) != (y) ? (x) : ((y) < (x) ? (y) : (x)))
#define CQ_MAX(x, y) ((x) != (x) ? (y) : (y) != (y) ? (x) : ((y) > (x) ? (y) : (x)))

#endif
