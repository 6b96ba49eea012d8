/* PRINT, ASSERT and ASSERT_FMT (LANGUAGE.md §6.9, §13; croqvm/interp/output.py and
 * fmt.py): one lane after another, in lane order; a failed check faults in its lowest
 * failing lane. Values are written as print writes them: bool true/false, integers in
 * decimal, floats as C++ streams do (%g of the value as a double), any NaN as "nan". */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "cq_engine.h"

/* One lane's value of a register as print writes it. */
void cq_format_value(char *dst, size_t cap, int type, const void *reg, int i)
{
    switch (type) {
    case CQ_BOOL:
        snprintf(dst, cap, "%s", ((const uint8_t *)reg)[i] ? "true" : "false");
        return;
    case CQ_U64:
        snprintf(dst, cap, "%" PRIu64, ((const uint64_t *)reg)[i]);
        return;
    case CQ_F32:
    case CQ_F64: {
        double x = cq_to_double(type, reg, i);
        if (isnan(x))
            snprintf(dst, cap, "nan");
        else
            snprintf(dst, cap, "%g", x);
        return; }
    default:
        snprintf(dst, cap, "%" PRId64, cq_to_int64(type, reg, i));
    }
}

/* Lane i's text of print format ``fmt`` without its newline (malloc'ed). */
char *cq_print_text(cq_warp *w, const cq_print *fmt, int i, size_t *len)
{
    const cq_code *code = w->blk->code;
    const cq_prog *prog = w->blk->call->prog;
    size_t cap = 64, n = 0;
    char *s = cq_xmalloc(cap);
    for (int k = 0; k < fmt->n; k++) {
        char num[64];
        const char *piece;
        size_t m;
        if (fmt->kind[k] == 0) {
            piece = prog->strings + prog->str_off[fmt->x[k]];
            m = (size_t)prog->str_len[fmt->x[k]];
        } else {
            int r = fmt->x[k];
            cq_format_value(num, sizeof num, code->rtype[r], w->regs + code->roff[r], i);
            piece = num;
            m = strlen(num);
        }
        while (n + m + 2 > cap)
            cap *= 2;
        s = realloc(s, cap);
        if (!s)
            abort();
        memcpy(s + n, piece, m);
        n += m;
    }
    s[n] = 0;
    *len = n;
    return s;
}

int cq_op_print(cq_warp *w, const cq_ins *ins)
{
    const cq_print *fmt = &w->blk->code->print[ins->a];
    for (uint32_t m = w->act; m; m &= m - 1) {
        size_t n;
        char *text = cq_print_text(w, fmt, cq_low(m), &n);
        if (fmt->newline)
            text[n++] = '\n';
        cq_out_write(w->blk->call, text, n);
        free(text);
    }
    return CQ_ST_OK;
}

/* ASSERT: message K[b] as lowering worded it, verbatim. ASSERT_FMT: the failing lane's
 * values shown as print shows them (§5.5.2, §6.2.2). */
int cq_op_assert(cq_warp *w, const cq_ins *ins)
{
    const uint8_t *cond = (const uint8_t *)w->regs + w->blk->code->roff[ins->a];
    uint32_t failed = 0;
    for (uint32_t m = w->act; m; m &= m - 1)
        if (!cond[cq_low(m)])
            failed |= m & -m;
    if (!failed)
        return CQ_ST_OK;
    int i = cq_low(failed);
    if (ins->op == CQ_OP_ASSERT) {
        cq_fault *f = cq_fault_new(w->blk, ins, CQ_F_ASSERT, w->base + i);
        f->i[0] = ins->b;
        return CQ_ST_FAULT;
    }
    cq_call *call = w->blk->call;
    size_t n;
    free(call->fault_text);
    call->fault_text = cq_print_text(w, &w->blk->code->print[ins->b], i, &n);
    cq_fault *f = cq_fault_new(w->blk, ins, CQ_F_ASSERT_FMT, w->base + i);
    f->text = call->fault_text;
    return CQ_ST_FAULT;
}
