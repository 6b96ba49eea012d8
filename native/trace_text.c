/* A native trace's file (croqvm trace -o FILE.json): the Trace Event Format text of its
 * slices and flows, written from the records native/trace.c made, so that no Python
 * object is made per event. croqvm/trace/output.py ``events`` is the specification, and
 * this text is what json.dump makes of its events, byte for byte
 * (tests/test_trace_file.py); croqvm/trace/native.py hands the strings, already JSON,
 * so that only numbers are formatted here.
 *
 * Conventions: ``tx`` the text's inputs and where it goes on, ``o`` the next byte of the
 * output buffer, ``s`` a slice; a time is a number of ten-thousandths of a microsecond
 * (``us``), the value Python's round(cycles * scale, 4) stands for. */
#include <math.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <string.h>
#include "cq_api.h"

#define KIND_RUN 0
#define KIND_WAIT 1
#define KIND_COPY 2
#define KIND_LAUNCH 3
/* the room an event takes besides its two strings: its keys and numbers */
#define EVENT_ROOM 256

/* round(x, 4) as Python computes it: the decimal nearest to x's exact binary value, ties
 * to even, counted in ten-thousandths. x = m * 2^e exactly (its bits), and m * 10^4 < 2^67
 * fits the 128-bit product; 0 <= x < 2^39 (croqvm/trace/native.py checks it). */
static int64_t us(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int biased = (int)(bits >> 52);
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
    if (biased)
        m |= UINT64_C(1) << 52;
    int shift = 1075 - (biased ? biased : 1);      /* x = m * 2^-shift */
    unsigned __int128 p = (unsigned __int128)m * 10000;
    if (shift <= 0)
        return (int64_t)(p << -shift);
    if (shift > 68)          /* p < 2^67: less than half a unit */
        return 0;
    unsigned __int128 q = p >> shift, rest = p - (q << shift);
    unsigned __int128 half = (unsigned __int128)1 << (shift - 1);
    if (rest > half || (rest == half && (q & 1)))
        q++;
    return (int64_t)q;
}

/* round(x, 4) in ten-thousandths, at once where the product's rounding (at most
 * y * 2^-53) can not decide it: y is not that close to a half. */
static inline int64_t us_fast(double x)
{
    double y = x * 10000.0;
    if (y < 0x1p52) {
        int64_t whole = (int64_t)y;
        double rest = y - (double)whole;
        if (fabs(rest - 0.5) > y * 0x1p-52)
            return whole + (rest > 0.5);
    }
    return us(x);
}

/* round(end - start, 4) in ten-thousandths, of the doubles round() gave (``start`` and
 * ``end`` in ten-thousandths). Below 2^30 us each double is within 2^-24 of its decimal
 * and their difference rounds by 2^-24 at most: less than half a ten-thousandth from the
 * difference of the decimals, which is the result. Above, the doubles themselves (the
 * nearest to the decimals: n < 2^53 is exact, the division rounds once). */
static inline int64_t duration(int64_t start, int64_t end)
{
    if (end < INT64_C(10737418240000))
        return end - start;
    return us((double)end / 10000.0 - (double)start / 10000.0);
}

static const char DIGITS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline char *put_uint(char *o, uint64_t u)
{
    int n = 1;
    for (uint64_t v = u; v >= 10; v /= 10)
        n++;
    char *e = o + n;
    while (u >= 100) {
        e -= 2;
        memcpy(e, DIGITS + 2 * (u % 100), 2);
        u /= 100;
    }
    if (u >= 10)
        memcpy(e - 2, DIGITS + 2 * u, 2);
    else
        e[-1] = (char)('0' + u);
    return o + n;
}

static inline char *put_int(char *o, int64_t n)
{
    if (n < 0) {
        *o++ = '-';
        return put_uint(o, -(uint64_t)n);
    }
    return put_uint(o, (uint64_t)n);
}

/* repr() of the double round() gave: its decimal with at most 4 decimals and no trailing
 * zero but one. Below 2^39 two such decimals are further apart than two doubles (2^-14 at
 * most), so the shortest text that reads back as the double is that decimal, written
 * without an exponent (repr uses one from 10^16). */
static inline char *put_time(char *o, int64_t n)
{
    o = put_uint(o, (uint64_t)n / 10000);
    int frac = (int)(n % 10000);
    *o++ = '.';
    if (!frac) {
        *o++ = '0';
        return o;
    }
    int high = frac / 100, low = frac % 100;
    memcpy(o, DIGITS + 2 * high, 2);
    memcpy(o + 2, DIGITS + 2 * low, 2);
    /* without its trailing zeros, counted from the two pairs rather than read back from
     * the text just stored (a load waiting on those stores, and a branch per zero) */
    return o + 4 - (low ? low % 10 == 0 : 2 + (high % 10 == 0));
}

static char *put_hex(char *o, uint32_t n)
{
    char digits[8];
    int k = 0;
    do {
        digits[k++] = "0123456789abcdef"[n & 15];
        n >>= 4;
    } while (n);
    *o++ = '0';
    *o++ = 'x';
    while (k)
        *o++ = digits[--k];
    return o;
}

static char *put(char *o, const char *text, size_t n)
{
    memcpy(o, text, n);
    return o + n;
}

#define PUT(o, literal) put((o), (literal), sizeof(literal) - 1)

static int64_t length(const cq_trace_text *tx, int32_t k)
{
    return k < 0 ? 0 : tx->at[k + 1] - tx->at[k];
}

static char *put_string(char *o, const cq_trace_text *tx, int32_t k)
{
    return put(o, tx->text + tx->at[k], (size_t)length(tx, k));
}

/* A slice's complete event ("X"): its name, track, start and duration (rounded ends, so
 * that touching slices still touch: ``ts`` and ``te`` in ten-thousandths), its "args"
 * (where it is, its lanes when not the whole warp ran or it is a copy, their mask) and
 * its category (none for a statement). */
static char *put_slice(char *o, const cq_trace_text *tx, const cq_slice *s, int32_t name,
                       int32_t where, int64_t ts, int64_t te)
{
    static const char *const category[] = {NULL, "wait", "copy", "launch"};
    o = PUT(o, "{\"ph\":\"X\",\"name\":");
    o = put_string(o, tx, name);
    if (s->kind == KIND_COPY) {       /* its name ends with the bytes it moves */
        o = PUT(o, " (");
        o = put_int(o, (int64_t)tx->details[s->mask].bytes);
        o = PUT(o, " B)\"");
    }
    o = PUT(o, ",\"pid\":");
    o = put_int(o, s->pid);
    o = PUT(o, ",\"tid\":");
    o = put_int(o, s->tid);
    o = PUT(o, ",\"ts\":");
    o = put_time(o, ts);
    o = PUT(o, ",\"dur\":");
    o = put_time(o, duration(ts, te));
    int masked = s->kind == KIND_RUN && s->masked;
    if (where >= 0 || masked || s->kind == KIND_COPY) {
        o = PUT(o, ",\"args\":{");
        if (where >= 0)
            o = put_string(o, tx, where);
        if (masked || s->kind == KIND_COPY) {
            if (where >= 0)
                *o++ = ',';
            o = PUT(o, "\"lanes\":");
            o = put_int(o, s->lanes);
        }
        if (masked) {
            o = PUT(o, ",\"mask\":\"");
            o = put_hex(o, s->mask);
            *o++ = '"';
        }
        *o++ = '}';
    }
    if (category[s->kind]) {
        o = PUT(o, ",\"cat\":\"");
        o = put(o, category[s->kind], strlen(category[s->kind]));
        *o++ = '"';
    }
    *o++ = '}';
    return o;
}

/* Point ``k`` of flow ``id``: its start ("s"), a step ("t") or its finish ("f", bound to
 * the slice it ends in). */
static char *put_point(char *o, const cq_trace_text *tx, const cq_flow *f, int64_t id, int k)
{
    o = PUT(o, "{\"ph\":\"");
    *o++ = k == 0 ? 's' : k == f->n - 1 ? 'f' : 't';
    o = PUT(o, "\",\"id\":");
    o = put_int(o, id);
    o = PUT(o, ",\"name\":");
    o = put_string(o, tx, tx->flow_name[f->kind]);
    o = PUT(o, ",\"cat\":\"flow\",\"pid\":");
    o = put_int(o, f->pid[k]);
    o = PUT(o, ",\"tid\":");
    o = put_int(o, f->tid[k]);
    o = PUT(o, ",\"ts\":");
    o = put_time(o, us_fast(f->t[k] * tx->scale));
    if (k == f->n - 1)
        o = PUT(o, ",\"bp\":\"e\"");
    *o++ = '}';
    return o;
}

/* The events from where ``tx`` goes on that fit before ``end``. */
static inline char *fill(cq_trace_text *tx, char *o, const char *end)
{
    /* a slice mostly starts when the slice before it ended (its warp's previous one):
     * that time rounded once, for both */
    double last = -1.0;
    int64_t last_us = 0;
    for (; tx->slice < tx->nslices; tx->slice++) {
        const cq_slice *s = &tx->slices[tx->slice];
        int32_t name, where;
        switch (s->kind) {
        case KIND_RUN:
            name = tx->run_name[s->row];
            where = tx->run_where[s->row];
            break;
        case KIND_LAUNCH:
            name = tx->launch_name[s->row];
            where = tx->where[s->row];
            break;
        default:                        /* a wait or a copy: by its details */
            name = tx->detail_name[s->mask];
            where = tx->detail_where[s->mask];
            break;
        }
        if (end - o < EVENT_ROOM + length(tx, name) + length(tx, where))
            return o;
        if (tx->comma)
            *o++ = ',';
        tx->comma = 1;
        tx->events++;
        int64_t ts = s->start == last ? last_us : us_fast(s->start * tx->scale);
        last = s->end;
        last_us = us_fast(s->end * tx->scale);
        o = put_slice(o, tx, s, name, where, ts, last_us);
    }
    for (; tx->flow < tx->nflows; tx->flow++, tx->point = 0) {
        const cq_flow *f = &tx->flows[tx->flow];
        for (; f->n >= 2 && tx->point < f->n; tx->point++) {
            if (end - o < EVENT_ROOM + length(tx, tx->flow_name[f->kind]))
                return o;
            if (tx->comma)
                *o++ = ',';
            tx->comma = 1;
            tx->events++;
            o = put_point(o, tx, f, tx->flow, tx->point);
        }
    }
    return o;
}

int64_t cq_trace_text_next(cq_trace_text *tx, char *buf, int64_t cap)
{
    cq_trace_text local = *tx;      /* which the text written can not alias */
    char *o = fill(&local, buf, buf + cap);
    *tx = local;
    return o - buf;
}

void cq_clear_upper_vectors(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static int avx = -1;
    if (avx < 0)
        avx = __builtin_cpu_supports("avx") != 0;
    if (avx)
        __asm__ volatile("vzeroupper" ::: "memory");
#endif
}

int32_t cq_upper_vectors_in_use(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    unsigned a, b, c, d;
    /* XGETBV with ECX = 1 (CPUID.(EAX=0DH,ECX=1):EAX[2]) under an OS that enabled it */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
        !__get_cpuid_count(0xD, 1, &a, &b, &c, &d) || !(a & 4))
        return -1;
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    /* bit 2: the upper 128 bits of ymm0-15; bit 6: the upper 256 bits of zmm0-15 */
    return (lo & ((1u << 2) | (1u << 6))) != 0;
#else
    return -1;
#endif
}
