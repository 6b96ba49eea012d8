/* Loading a program: the image croqvm/native/flatten.py writes (its docstring is the
 * layout) becomes a cq_prog; every instruction is decoded once into a cq_ins naming its
 * specialised handler, register offsets and types (design-native-cuda.md §2.3).
 *
 * The image comes from a verified module, so its indices are trusted; the reader still
 * checks that it stays inside the image, and a malformed image is a load error (an
 * internal error for Python), never a crash. */
#include <setjmp.h>
#include <stdlib.h>
#include "cq_engine.h"
#include "cq_types.h"

typedef struct {
    const int64_t *w;
    size_t n, at;
    jmp_buf fail;
    const char *why;
} reader;

static int64_t rd(reader *r)
{
    if (r->at >= r->n) {
        r->why = "image ends early";
        longjmp(r->fail, 1);
    }
    return r->w[r->at++];
}

static int32_t *rd_list(reader *r, int32_t n)
{
    int32_t *out = cq_xcalloc((size_t)n + 1, sizeof(int32_t));
    for (int32_t k = 0; k < n; k++)
        out[k] = (int32_t)rd(r);
    return out;
}

/* A count followed by that many words. */
static int32_t *rd_counted(reader *r, int32_t *n)
{
    *n = (int32_t)rd(r);
    return rd_list(r, *n);
}

/* ------------------------------------------------------------------ decoding */

#define CQ_FAMILY_ENTRY(OP) [CQ_OP_##OP] = HB_##OP,
static const int16_t family[CQ_NUM_OPCODES] = { CQ_ALU_FAMILIES(CQ_FAMILY_ENTRY) };
#undef CQ_FAMILY_ENTRY
#define CQ_OWN_ENTRY(OP) [CQ_OP_##OP] = H_##OP,
static const int16_t own[CQ_NUM_OPCODES] = { CQ_OWN_CASES(CQ_OWN_ENTRY) };
#undef CQ_OWN_ENTRY

int cq_update_handler(int op, int type)
{
    return family[op] + type;
}

/* Which register's type selects an ALU family's handler: the first source, except for
 * MOV and SELECT (the destination, which they copy into). */
static int handler_of(const cq_ins *ins)
{
    if (family[ins->op])
        return family[ins->op] +
               (ins->op == CQ_OP_MOV || ins->op == CQ_OP_SELECT ? ins->ta : ins->tb);
    return own[ins->op] ? own[ins->op] : H_OTHER;
}

static void decode(reader *r, const cq_code *code, const int64_t *words, cq_ins *ins)
{
    memset(ins, 0, sizeof *ins);
    if (words[0] < 0 || words[0] >= CQ_NUM_OPCODES) {
        r->why = "unknown opcode";
        longjmp(r->fail, 1);
    }
    ins->op = (uint16_t)words[0];
    int32_t *ops[5] = {&ins->a, &ins->b, &ins->c, &ins->d, &ins->e};
    uint32_t *offs[4] = {&ins->ra, &ins->rb, &ins->rc, &ins->rd};
    uint8_t *types[4] = {&ins->ta, &ins->tb, &ins->tc, &ins->td};
    char kinds[CQ_MAX_OPERANDS + 1] = {0};     /* the operand kind letters, '?' dropped */
    for (const char *p = CQ_OPERAND_KINDS[ins->op], *q = p; *q; q++)
        if (*q != '?')
            kinds[strlen(kinds)] = *q;
    for (int k = 0; k < 5; k++) {
        *ops[k] = (int32_t)words[1 + k];
        if (k < 4 && kinds[k] == 'r') {
            if (*ops[k] < 0 || *ops[k] >= code->nregs) {
                r->why = "register out of range";
                longjmp(r->fail, 1);
            }
            *offs[k] = code->roff[*ops[k]];
            *types[k] = code->rtype[*ops[k]];
        }
    }
    ins->span = (int32_t)words[6];
    ins->h = (uint16_t)handler_of(ins);
}

static cq_ins *rd_code_words(reader *r, const cq_code *code, int32_t *n)
{
    *n = (int32_t)rd(r);
    cq_ins *ins = cq_xcalloc((size_t)*n + 1, sizeof(cq_ins));
    for (int32_t k = 0; k < *n; k++) {
        int64_t words[7];
        for (int j = 0; j < 7; j++)
            words[j] = rd(r);
        decode(r, code, words, &ins[k]);
    }
    return ins;
}

/* The element type an access's base declares (a buffer's, or a future's, §9.4.4). */
static int element_type(const cq_code *code, int a)
{
    const cq_access *acc = &code->access[a];
    return acc->kind == 0 ? code->buf[acc->base].type : code->fut_type[acc->base];
}

/* What the driver works out for some instructions, one word each, in order: a CONST's
 * value (its bits in R[a]'s storage type), an UPDATE's arithmetic type (§12.2). */
static void rd_aux(reader *r, const cq_code *code, cq_ins *ins, int32_t n)
{
    for (int32_t k = 0; k < n; k++) {
        if (ins[k].op == CQ_OP_CONST)
            ins[k].k = rd(r);
        if (ins[k].op == CQ_OP_LOAD)
            ins[k].te = (uint8_t)element_type(code, ins[k].b);
        if (ins[k].op == CQ_OP_STORE)
            ins[k].te = (uint8_t)element_type(code, ins[k].a);
        if (ins[k].op == CQ_OP_ATOMIC)
            ins[k].te = (uint8_t)element_type(code, ins[k].b);
        if (ins[k].op == CQ_OP_UPDATE) {
            ins[k].te = (uint8_t)element_type(code, ins[k].a);
            ins[k].tt = (uint8_t)rd(r);
            ins[k].hx = (uint16_t)(family[ins[k].c] + ins[k].tt);
        }
    }
}

/* Per instruction, the registers it reads and those it writes (two counted lists), into
 * code->uses from code->use_at[k] on: the initialisation check's (cq_dispatch.inc). */
static void rd_uses(reader *r, cq_code *code)
{
    code->use_at = cq_xcalloc((size_t)code->n + 1, sizeof(int32_t));
    size_t cap = 16, n = 0;
    code->uses = cq_xmalloc(cap * sizeof(int32_t));
    for (int32_t k = 0; k < code->n; k++) {
        code->use_at[k] = (int32_t)n;
        for (int list = 0; list < 2; list++) {
            int64_t count = rd(r);
            if (count < 0 || count > code->nregs) {
                r->why = "a register list longer than the registers";
                longjmp(r->fail, 1);
            }
            while (n + (size_t)count + 1 > cap) {
                cap *= 2;
                int32_t *grown = realloc(code->uses, cap * sizeof(int32_t));
                if (!grown)
                    abort();
                code->uses = grown;
            }
            code->uses[n++] = (int32_t)count;
            for (int64_t j = 0; j < count; j++) {
                int64_t reg = rd(r);
                if (reg < 0 || reg >= code->nregs) {
                    r->why = "a register out of range";
                    longjmp(r->fail, 1);
                }
                code->uses[n++] = (int32_t)reg;
            }
        }
    }
}

static int32_t rd_type(reader *r)
{
    int64_t t = rd(r);
    if (t < 0 || t >= CQ_NUM_DTYPES) {
        r->why = "unknown element type";
        longjmp(r->fail, 1);
    }
    return (int32_t)t;
}

static void rd_code(reader *r, cq_code *code)
{
    code->nregs = (int32_t)rd(r);
    code->rtype = cq_xcalloc((size_t)code->nregs + 1, 1);
    code->roff = cq_xcalloc((size_t)code->nregs + 1, sizeof(uint32_t));
    size_t off = 0;
    for (int32_t k = 0; k < code->nregs; k++) {
        int32_t t = rd_type(r);
        code->rtype[k] = (uint8_t)t;
        code->roff[k] = (uint32_t)off;
        off += ((size_t)CQ_WARP * cq_type_size[t] + 63) / 64 * 64;
    }
    code->warp_bytes = off;

    code->nbuf = (int32_t)rd(r);
    code->buf = cq_xcalloc((size_t)code->nbuf + 1, sizeof(cq_bufdecl));
    for (int32_t k = 0; k < code->nbuf; k++) {
        cq_bufdecl *b = &code->buf[k];
        b->storage = (int32_t)rd(r);
        b->type = rd_type(r);
        b->count = (int32_t)rd(r);
        b->is_array = (int32_t)rd(r);
        b->shape = rd_counted(r, &b->nshape);
    }
    code->fut_type = rd_counted(r, &code->nfut);
    code->nevent = (int32_t)rd(r);
    code->event = cq_xcalloc((size_t)code->nevent + 1, sizeof(cq_eventdecl));
    for (int32_t k = 0; k < code->nevent; k++) {
        cq_eventdecl *e = &code->event[k];
        e->slots = (int32_t)rd(r);
        e->ready = (int32_t)rd(r);
        e->count = (int32_t)rd(r);
        e->cluster = (int32_t)rd(r);
        e->ls = rd_counted(r, &e->nls);
    }
    code->nfrag = (int32_t)rd(r);
    code->frag = cq_xcalloc((size_t)code->nfrag + 1, sizeof(cq_fragdecl));
    for (int32_t k = 0; k < code->nfrag; k++) {
        code->frag[k].type = rd_type(r);
        code->frag[k].unit = (int32_t)rd(r);
        code->frag[k].rows = (int32_t)rd(r);
        code->frag[k].cols = (int32_t)rd(r);
    }
    code->naccess = (int32_t)rd(r);
    code->access = cq_xcalloc((size_t)code->naccess + 1, sizeof(cq_access));
    for (int32_t k = 0; k < code->naccess; k++) {
        cq_access *a = &code->access[k];
        a->kind = (int32_t)rd(r);
        a->base = (int32_t)rd(r);
        a->arr = (int32_t)rd(r);
        a->idx = rd_counted(r, &a->n);
    }
    code->nview = (int32_t)rd(r);
    code->view = cq_xcalloc((size_t)code->nview + 1, sizeof(cq_viewdecl));
    for (int32_t k = 0; k < code->nview; k++) {
        cq_viewdecl *v = &code->view[k];
        int32_t n2;
        v->kind = (int32_t)rd(r);
        v->base = (int32_t)rd(r);
        v->arr = (int32_t)rd(r);
        v->origin = rd_counted(r, &v->n);
        v->extents = rd_counted(r, &n2);
        v->swizzle = (int32_t)rd(r);
        v->space = rd_counted(r, &v->nspace);
        v->flat = (int32_t)rd(r);
        v->shown = rd_counted(r, &v->nshown);
        v->strides = rd_counted(r, &v->nstrides);
    }
    code->ndma = (int32_t)rd(r);
    code->dma = cq_xcalloc((size_t)code->ndma + 1, sizeof(cq_dmadecl));
    for (int32_t k = 0; k < code->ndma; k++) {
        cq_dmadecl *d = &code->dma[k];
        d->op = (int32_t)rd(r);
        d->src = (int32_t)rd(r);
        d->dst_view = (int32_t)rd(r);
        d->dst_buffer = (int32_t)rd(r);
        d->future = (int32_t)rd(r);
        d->is_async = (int32_t)rd(r);
        d->zfill = (int32_t)rd(r);
        d->pad_value = (int32_t)rd(r);
        d->perm = rd_counted(r, &d->nperm);
        d->pad_lo = rd_counted(r, &d->npad);
        d->pad_hi = rd_list(r, d->npad);
        d->pad_mid = rd_list(r, d->npad);
        d->swz_src = (int32_t)rd(r);
        d->swz_dst = (int32_t)rd(r);
    }
    code->ncoll = (int32_t)rd(r);
    code->coll = cq_xcalloc((size_t)code->ncoll + 1, sizeof(cq_coll));
    for (int32_t k = 0; k < code->ncoll; k++) {
        code->coll[k].laneset = (int32_t)rd(r);
        code->coll[k].unit = (int32_t)rd(r);
    }
    code->nprint = (int32_t)rd(r);
    code->print = cq_xcalloc((size_t)code->nprint + 1, sizeof(cq_print));
    for (int32_t k = 0; k < code->nprint; k++) {
        cq_print *p = &code->print[k];
        p->n = (int32_t)rd(r);
        p->kind = rd_list(r, p->n);
        p->x = rd_list(r, p->n);
        p->newline = (int32_t)rd(r);
    }
    code->nlaunch = (int32_t)rd(r);
    code->launch = cq_xcalloc((size_t)code->nlaunch + 1, sizeof(cq_launch));
    for (int32_t k = 0; k < code->nlaunch; k++) {
        cq_launch *l = &code->launch[k];
        int32_t n;
        l->kernel = (int32_t)rd(r);
        l->is_async = (int32_t)rd(r);
        l->span = (int32_t)rd(r);
        l->block = (int32_t)rd(r);
        l->cooperative = (int32_t)rd(r);
        l->stream = (int32_t)rd(r);
        l->grid = rd_counted(r, &l->ngrid);
        l->buf = rd_counted(r, &n);
        l->nbuf = n / 2;
        l->scalar = rd_counted(r, &n);
        l->nscalar = n / 2;
        l->cluster = rd_counted(r, &l->ncluster);
        if (l->ncluster > l->ngrid) {
            r->why = "a launch with more cluster extents than grid extents";
            longjmp(r->fail, 1);
        }
    }
    code->ncxxcall = (int32_t)rd(r);
    code->cxxcall = cq_xcalloc((size_t)code->ncxxcall + 1, sizeof(cq_cxxcall));
    for (int32_t k = 0; k < code->ncxxcall; k++) {
        cq_cxxcall *c = &code->cxxcall[k];
        c->func = (int32_t)rd(r);
        c->result = (int32_t)rd(r);
        c->args = rd_counted(r, &c->nargs);
        c->pointer = rd_counted(r, &c->npointer);
        if (c->npointer != c->nargs) {
            r->why = "a C++ call without a pointer flag per argument";
            longjmp(r->fail, 1);
        }
    }
    code->once_sites = (int32_t)rd(r);
    code->event_bytes = rd(r);
    code->nlaneset = (int32_t)rd(r);
    code->laneset = cq_xcalloc((size_t)code->nlaneset + 1, sizeof(cq_laneset));
    for (int32_t k = 0; k < code->nlaneset; k++) {
        code->laneset[k].result = (int32_t)rd(r);
        code->laneset[k].ins = rd_code_words(r, code, &code->laneset[k].n);
    }
    code->ins = rd_code_words(r, code, &code->n);
    rd_aux(r, code, code->ins, code->n);
    for (int32_t k = 0; k < code->nlaneset; k++)
        rd_aux(r, code, code->laneset[k].ins, code->laneset[k].n);
    rd_uses(r, code);

    /* derived: the collective instructions' count slots, the deepest nesting, printing */
    code->coll_slot = cq_xcalloc((size_t)code->n + 1, sizeof(int32_t));
    int depth = 0;
    for (int32_t k = 0; k < code->n; k++) {
        int op = code->ins[k].op;
        code->coll_slot[k] = CQ_SITE[op] >= 0 ? code->ncoll_ins++ : -1;  /* may arrive */
        if (op == CQ_OP_IF || op == CQ_OP_LOOP)
            depth++;
        else if (op == CQ_OP_END)
            depth--;
        if (depth > code->depth)
            code->depth = depth;
        code->prints |= op == CQ_OP_PRINT;
        code->grid_sync |= op == CQ_OP_GRID_SYNC;
        code->trigger_cluster |= op == CQ_OP_TRIGGER_CLUSTER;
        if (op == CQ_OP_ATOMIC) {
            const cq_access *acc = &code->access[code->ins[k].b];
            code->global_atomics |= acc->kind != 0 ||
                                    code->buf[acc->base].storage != CQ_STORAGE_SHARED;
        }
    }
}

static void free_code(cq_code *code)
{
    for (int32_t k = 0; k < code->nbuf; k++)
        free(code->buf[k].shape);
    for (int32_t k = 0; k < code->nevent; k++)
        free(code->event[k].ls);
    for (int32_t k = 0; k < code->naccess; k++)
        free(code->access[k].idx);
    for (int32_t k = 0; k < code->nview; k++) {
        free(code->view[k].origin);
        free(code->view[k].extents);
        free(code->view[k].space);
        free(code->view[k].shown);
        free(code->view[k].strides);
    }
    for (int32_t k = 0; k < code->ndma; k++) {
        free(code->dma[k].perm);
        free(code->dma[k].pad_lo);
        free(code->dma[k].pad_hi);
        free(code->dma[k].pad_mid);
    }
    for (int32_t k = 0; k < code->nlaneset; k++)
        free(code->laneset[k].ins);
    for (int32_t k = 0; k < code->nprint; k++) {
        free(code->print[k].kind);
        free(code->print[k].x);
    }
    for (int32_t k = 0; k < code->nlaunch; k++) {
        free(code->launch[k].grid);
        free(code->launch[k].buf);
        free(code->launch[k].scalar);
        free(code->launch[k].cluster);
    }
    for (int32_t k = 0; k < code->ncxxcall; k++) {
        free(code->cxxcall[k].args);
        free(code->cxxcall[k].pointer);
    }
    free(code->cxxcall);
    free(code->use_at);
    free(code->uses);
    free(code->ins);
    free(code->rtype);
    free(code->roff);
    free(code->buf);
    free(code->fut_type);
    free(code->event);
    free(code->frag);
    free(code->access);
    free(code->view);
    free(code->dma);
    free(code->coll);
    free(code->laneset);
    free(code->print);
    free(code->launch);
    free(code->coll_slot);
}

static _Thread_local const char *load_error;

const char *cq_load_error(void)
{
    return load_error;
}

#define CQ_IMAGE_MAGIC 0x31474d4951435143LL   /* "CQCQIMG1" */

cq_prog *cq_load(const int64_t *image, size_t nwords, const char *strings, size_t nbytes)
{
    reader r;
    memset(&r, 0, sizeof r);
    r.w = image;
    r.n = nwords;
    cq_prog *prog = cq_xcalloc(1, sizeof *prog);
    if (setjmp(r.fail)) {
        load_error = r.why;
        cq_prog_free(prog);
        return NULL;
    }
    if (rd(&r) != CQ_IMAGE_MAGIC) {
        r.why = "not a croqvm native image";
        longjmp(r.fail, 1);
    }
    prog->strings = cq_xmalloc(nbytes + 1);
    memcpy(prog->strings, strings, nbytes);
    prog->nstrings = (int32_t)rd(&r);
    prog->str_off = cq_xcalloc((size_t)prog->nstrings + 1, sizeof(int64_t));
    prog->str_len = cq_xcalloc((size_t)prog->nstrings + 1, sizeof(int64_t));
    for (int32_t k = 0; k < prog->nstrings; k++) {
        prog->str_off[k] = rd(&r);
        prog->str_len[k] = rd(&r);
        if (prog->str_off[k] < 0 || prog->str_len[k] < 0 ||
            (size_t)(prog->str_off[k] + prog->str_len[k]) > nbytes) {
            r.why = "string out of range";
            longjmp(r.fail, 1);
        }
    }
    prog->fn_span = (int32_t)rd(&r);
    rd_code(&r, &prog->host);
    prog->nkernels = (int32_t)rd(&r);
    prog->kernels = cq_xcalloc((size_t)prog->nkernels + 1, sizeof(cq_kernel));
    for (int32_t k = 0; k < prog->nkernels; k++) {
        prog->kernels[k].block_size = (int32_t)rd(&r);
        prog->kernels[k].grid_rank = (int32_t)rd(&r);
        prog->kernels[k].span = (int32_t)rd(&r);
        rd_code(&r, &prog->kernels[k].code);
    }
    if (r.at != r.n) {
        r.why = "image has trailing words";
        longjmp(r.fail, 1);
    }
    return prog;
}

void cq_prog_free(cq_prog *prog)
{
    if (!prog)
        return;
    free_code(&prog->host);
    for (int32_t k = 0; k < prog->nkernels; k++)
        free_code(&prog->kernels[k].code);
    free(prog->kernels);
    free(prog->strings);
    free(prog->str_off);
    free(prog->str_len);
    free(prog->cxx);
    free(prog);
}

void cq_prog_set_cxx(cq_prog *prog, int32_t n, cq_cxx_fn *fns)
{
    free(prog->cxx);
    prog->cxx = cq_xcalloc((size_t)n + 1, sizeof(cq_cxx_fn));
    memcpy(prog->cxx, fns, (size_t)n * sizeof(cq_cxx_fn));
    prog->ncxx = n;
}
