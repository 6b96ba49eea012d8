/* Fibers for the CPU runtime (cq_cpu.h): one per emulated CUDA thread.
 *
 * A fiber is a stack and a saved stack pointer. cq_fiber_switch(&from->sp, to->sp) saves
 * the callee-saved registers of the running code on its own stack, stores that stack
 * pointer, loads the other one and restores its registers; everything else is
 * caller-saved under the platform ABI, so the compiler has already spilled it.
 * x86-64 (System V) and aarch64 (AAPCS64) have an assembly switch without any system
 * call; elsewhere, or with -DCQ_FIBER_UCONTEXT, <ucontext.h> is used (glibc makes one
 * rt_sigprocmask call per switch, about 10x slower). The floating-point control
 * registers (MXCSR, x87 control word, FPCR) are not switched: generated code never
 * changes them, so every fiber runs in the thread's default environment.
 *
 * Stacks come from mmap with MAP_NORESERVE (pages are committed only when touched) and
 * an inaccessible guard page below, so an overflow faults at once instead of corrupting
 * a neighbour. Under AddressSanitizer every switch is announced with
 * __sanitizer_start/finish_switch_fiber.
 */
#ifndef CQ_FIBER_H
#define CQ_FIBER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(CQ_FIBER_UCONTEXT) && !defined(__x86_64__) && !defined(__aarch64__)
#define CQ_FIBER_UCONTEXT 1
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CQ_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CQ_FIBER_ASAN 1
#endif
#endif
#ifdef CQ_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#ifdef CQ_FIBER_UCONTEXT
#include <ucontext.h>
#endif

typedef struct cq_fiber_ctx {
#ifdef CQ_FIBER_UCONTEXT
  ucontext_t uc;
#else
  void *sp;                 /* saved stack pointer while switched out */
#endif
  unsigned char *stack;     /* usable stack (above the guard page); for a thread's own
                               stack only its bounds (ASan), never freed */
  size_t stack_size;
} cq_fiber_ctx;

#ifndef CQ_FIBER_UCONTEXT
extern "C" void cq_fiber_switch(void **save_sp, void *load_sp);
extern "C" void cq_fiber_boot(void);

#if defined(__x86_64__)
/* Pushes rbp rbx r12-r15, swaps rsp, pops them and returns into the other fiber. */
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl cq_fiber_switch\n"
    ".hidden cq_fiber_switch\n"
    ".type cq_fiber_switch,@function\n"
    "cq_fiber_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size cq_fiber_switch, .-cq_fiber_switch\n");
enum { CQ_FIBER_FRAME = 6 * 8 };
#elif defined(__aarch64__)
/* Saves x19-x30 and d8-d15 (the AAPCS64 callee-saved set) in a 160-byte frame. */
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl cq_fiber_switch\n"
    ".hidden cq_fiber_switch\n"
    ".type cq_fiber_switch,%function\n"
    "cq_fiber_switch:\n"
    "  sub sp, sp, #160\n"
    "  stp x19, x20, [sp, #0]\n  stp x21, x22, [sp, #16]\n  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n  stp x27, x28, [sp, #64]\n  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n  stp d10, d11, [sp, #112]\n"
    "  stp d12, d13, [sp, #128]\n  stp d14, d15, [sp, #144]\n"
    "  mov x2, sp\n  str x2, [x0]\n"
    "  mov sp, x1\n"
    "  ldp x19, x20, [sp, #0]\n  ldp x21, x22, [sp, #16]\n  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n  ldp x27, x28, [sp, #64]\n  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n  ldp d10, d11, [sp, #112]\n"
    "  ldp d12, d13, [sp, #128]\n  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #160\n"
    "  ret\n"
    ".size cq_fiber_switch, .-cq_fiber_switch\n");
enum { CQ_FIBER_FRAME = 160, CQ_FIBER_LR = 88 };
#endif
#endif /* !CQ_FIBER_UCONTEXT */

/* A stack of `size` usable bytes (rounded up to pages) below which lies a guard page.
   Returns 0 on success. */
static inline int cq_fiber_stack_alloc(cq_fiber_ctx *f, size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size = (size + page - 1) / page * page;
  void *p = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return -1;
  if (mprotect(p, page, PROT_NONE) != 0) {
    munmap(p, size + page);
    return -1;
  }
  f->stack = (unsigned char *)p + page;
  f->stack_size = size;
  return 0;
}

static inline void cq_fiber_stack_free(cq_fiber_ctx *f) {
  if (!f->stack) return;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  munmap(f->stack - page, f->stack_size + page);
  f->stack = NULL;
}

/* Prepares `f` so that the first switch to it calls entry(), which must never return
   (it ends by switching away for good). */
static inline void cq_fiber_prepare(cq_fiber_ctx *f, void (*entry)(void)) {
#ifdef CQ_FIBER_UCONTEXT
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = f->stack;
  f->uc.uc_stack.ss_size = f->stack_size;
  f->uc.uc_link = NULL;
  makecontext(&f->uc, entry, 0);
#else
  uintptr_t top = ((uintptr_t)(f->stack + f->stack_size)) & ~(uintptr_t)15;
#if defined(__x86_64__)
  /* `ret` pops the entry address at top-16, leaving rsp = top-8 as after a call; the
     word at top-8 is a null return address that ends backtraces. */
  void **sp = (void **)(top - 16) - 6;
  memset(sp, 0, CQ_FIBER_FRAME);
  sp[6] = (void *)entry;
  sp[7] = NULL;
  f->sp = sp;
#elif defined(__aarch64__)
  /* The restored x30 is the entry; x29 = 0 ends the frame chain. */
  unsigned char *sp = (unsigned char *)(top - CQ_FIBER_FRAME);
  memset(sp, 0, CQ_FIBER_FRAME);
  *(void **)(sp + CQ_FIBER_LR) = (void *)entry;
  f->sp = sp;
#endif
#endif
}

/* Switches from `from` (the running code) to `to`. `from_finished`: `from` never runs
   again (ASan then drops its fake stack). */
static inline void cq_fiber_switch_to(cq_fiber_ctx *from, cq_fiber_ctx *to, int from_finished) {
#ifdef CQ_FIBER_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(from_finished ? NULL : &fake, to->stack, to->stack_size);
#else
  (void)from_finished;
#endif
#ifdef CQ_FIBER_UCONTEXT
  swapcontext(&from->uc, &to->uc);
#else
  cq_fiber_switch(&from->sp, to->sp);
#endif
#ifdef CQ_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

/* First thing a new fiber does: under ASan, learn the bounds of the stack it was
   entered from (a thread's own stack, whose bounds nothing else gives us), so that
   switches back to `caller` can announce them. */
static inline void cq_fiber_entered(cq_fiber_ctx *caller) {
#ifdef CQ_FIBER_ASAN
  const void *bottom = NULL;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(NULL, &bottom, &size);
  caller->stack = (unsigned char *)bottom;
  caller->stack_size = size;
#else
  (void)caller;
#endif
}

#endif /* CQ_FIBER_H */
