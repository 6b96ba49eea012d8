/* PRINT, ASSERT and ASSERT_FMT (LANGUAGE.md §6.9, §13; croqvm/interp/output.py): one
 * lane after another, in lane order; a failed check faults in its lowest failing lane.
 * ASM faults (§6.11); CALL_CXX calls a C++ function lane after lane (§6.10.4).
 * Values are written as print writes them (croqvm.reports.messages.format_value): bool
 * true/false, integers in decimal, floats as %g of the value as a double, any NaN as
 * "nan" (cq_numerics.h cq_format_float). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "cq_engine.h"
#include "cq_types.h"

/* Lane i's value of register r as print writes it, into dst (returns its length). */
static int format_value(char *dst, size_t cap, const cq_code *code, const cq_warp *w, int r,
                        int i)
{
    int t = code->rtype[r];
    const char *reg = w->regs + code->roff[r];
    if (t == CQ_DT_BOOL)
        return snprintf(dst, cap, "%s", reg[i] ? "true" : "false");
    if (cq_is_float(t))
        return cq_format_float(dst, cap, cq_to_double(t, reg, i));
    if (t == CQ_DT_U64)
        return snprintf(dst, cap, "%" PRIu64, ((const uint64_t *)reg)[i]);
    return snprintf(dst, cap, "%" PRId64, cq_to_int64(t, reg, i));
}

int cq_op_print(cq_warp *w, const cq_ins *ins)
{
    const cq_code *code = w->blk->code;
    const cq_prog *prog = w->blk->call->prog;
    const cq_print *fmt = &code->print[ins->a];
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        for (int k = 0; k < fmt->n; k++) {
            if (fmt->kind[k] == 0) {
                int s = fmt->x[k];
                cq_out_write(w->blk->call, prog->strings + prog->str_off[s],
                             (size_t)prog->str_len[s]);
            } else {
                char num[64];
                int n = format_value(num, sizeof num, code, w, fmt->x[k], i);
                cq_out_write(w->blk->call, num, (size_t)n);
            }
        }
        if (fmt->newline)
            cq_out_write(w->blk->call, "\n", 1);
    }
    return CQ_ST_OK;
}

/* ASSERT: the message S[b] as lowering worded it. ASSERT_FMT: print format b with the
 * failing lane's values (§5.5.2, §6.2.2), which Python writes as print would. */
int cq_op_assert(cq_warp *w, const cq_ins *ins)
{
    const cq_code *code = w->blk->code;
    const uint8_t *cond = (const uint8_t *)w->regs + code->roff[ins->a];
    uint32_t failed = 0;
    for (uint32_t m = w->act; m; m &= m - 1)
        if (!cond[cq_low(m)])
            failed |= m & -m;
    if (!failed)
        return CQ_ST_OK;
    int i = cq_low(failed);
    if (ins->op == CQ_OP_ASSERT) {
        cq_put(cq_fault_new(w->blk, ins, CQ_FAULT_ASSERT, w->base + i), ins->b);
        return CQ_ST_FAULT;
    }
    cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_ASSERT_FMT, w->base + i);
    const cq_print *fmt = &code->print[ins->b];
    cq_put(f, ins->b);
    for (int k = 0; k < fmt->n; k++)
        if (fmt->kind[k] == 1) {
            int r = fmt->x[k], size = cq_type_size[code->rtype[r]];
            int64_t bits = 0;
            memcpy(&bits, w->regs + code->roff[r] + (size_t)i * size, size);
            cq_put(f, bits);
        }
    return CQ_ST_FAULT;
}

/* Inline assembly (LANGUAGE.md §6.11) is for a GPU's assembler: on the CPU the lowest
 * active lane faults before it runs. */
int cq_op_asm(cq_warp *w, const cq_ins *ins)
{
    cq_fault_new(w->blk, ins, CQ_FAULT_ASM_ON_CPU, w->base + cq_low(w->act));
    return CQ_ST_FAULT;
}

/* A function defined in no file of the program (LANGUAGE.md §6.10.6) has no code on the
 * CPU: the lowest active lane faults before it would call it; the message names S[a]. */
int cq_op_call_extern(cq_warp *w, const cq_ins *ins)
{
    cq_put(cq_fault_new(w->blk, ins, CQ_FAULT_EXTERN_CALL, w->base + cq_low(w->act)), ins->a);
    return CQ_ST_FAULT;
}

/* A C++ device function (LANGUAGE.md §6.10.4; croqvm/interp/cxxcall.py): called once per
 * active lane, in increasing lane order, with pointers to that lane's registers and to
 * the data of its instances of the buffers passed to pointer parameters, which then
 * count as written in poison mode. */
int cq_op_call_cxx(cq_warp *w, const cq_ins *ins)
{
    const cq_code *code = w->blk->code;
    const cq_cxxcall *c = &code->cxxcall[ins->a];
    const cq_prog *prog = w->blk->call->prog;
    if (c->func >= prog->ncxx || !prog->cxx[c->func])
        return CQ_INTERNAL_ERROR(w->blk);
    void *argv[c->nargs + 1];
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        for (int k = 0; k < c->nargs; k++) {
            int x = c->args[k];
            if (!c->pointer[k]) {
                argv[k] = w->regs + code->roff[x] + (size_t)i * cq_type_size[code->rtype[x]];
                continue;
            }
            cq_buf **insts = cq_instances(w->blk, x, w->base + i);
            if (!insts) {
                cq_put(cq_fault_new(w->blk, ins, CQ_FAULT_BUFFER_BEFORE_DECLARATION,
                                    w->base + i), x);
                return CQ_ST_FAULT;
            }
            argv[k] = insts[0]->data;
        }
        void *result = c->result < 0 ? NULL :
            w->regs + code->roff[c->result] + (size_t)i * cq_type_size[code->rtype[c->result]];
        prog->cxx[c->func](argv, result);
        for (int k = 0; k < c->nargs; k++) {
            cq_buf *b = c->pointer[k] ? cq_instances(w->blk, c->args[k], w->base + i)[0] : NULL;
            if (b && b->written)
                memset(b->written, 1, (size_t)b->count);
        }
    }
    return CQ_ST_OK;
}
