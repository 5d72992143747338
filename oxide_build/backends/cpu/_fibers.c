/* The CPU device's scheduler: runs the CUDA threads of a launch on the host, natively.
 *
 * The kernels themselves are host code that llvmlite JIT-compiles (oxide_build/backends/cpu/);
 * they read their thread's indices from `oxide_cpu_context` and call the functions below at
 * barriers, warp operations and failed checks. One launch runs at a time in a process (the
 * Python side holds a lock around `oxide_cpu_launch`), so this state is global.
 *
 * Blocks run one at a time, in order (x fastest). A kernel with no barrier and no warp
 * operation runs a block as one native loop over its threads (`block_fn`, generated per
 * kernel). Every other kernel runs each thread as a fiber with its own stack: a barrier or warp
 * operation records the arrival and switches back to the scheduler, which resumes the fibers
 * round-robin; the last thread to arrive releases the others and carries on. A cooperative
 * kernel (grid.sync) runs the threads of all blocks as fibers at once.
 *
 * A failed check ends its thread (`oxide_cpu_exit_thread`): the fiber is abandoned; in the
 * loop form the loop's fiber is, and the block's remaining threads run one by one.
 *
 * The fiber switch is a few instructions of assembly on x86-64 (the callee-saved registers and
 * the stack pointer); elsewhere ucontext. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define EXPORT __attribute__((visibility("default")))

/* ---- what the kernels read (the layout is oxide_build/backends/cpu/runtime.py's) ---------- */

typedef struct {
    int32_t tid[3];
    int32_t ctaid[3];
    int32_t ntid[3];
    int32_t nctaid[3];
    char *shared;          /* this block's shared memory: static arrays, then the dynamic one */
    int64_t position;      /* the loop form: the linear index of the thread running */
} oxide_cpu_context_t;

EXPORT oxide_cpu_context_t oxide_cpu_context;

/* ---- a launch, as Python describes it ----------------------------------------------------- */

enum { MODE_LOOP = 0, MODE_FIBERS = 1, MODE_COOPERATIVE = 2 };
enum {
    OK = 0,
    ERR_DEADLOCK = 1,        /* threads wait at a barrier the others never reach */
    ERR_BARRIER_MISMATCH = 2,/* threads of a block wait at different barriers */
    ERR_TRAP = 3,            /* a failed check with no error record */
    ERR_NO_MEMORY = 4,
    ERR_WARP_DEADLOCK = 5,   /* lanes wait at a warp operation whose other lanes never come */
    ERR_MEMCHECK = 6,        /* an access outside every allocation (memcheck) */
    ERR_RACE = 7,            /* two threads' accesses to a shared byte that nothing orders (racecheck) */
    ERR_UNINITIALIZED = 8,   /* a read of shared memory no thread wrote (initcheck) */
};
enum { CHECK_MEMORY = 1, CHECK_RACES = 2, CHECK_INIT = 4 };
enum { WAIT_NONE = 0, WAIT_BARRIER = 1, WAIT_WARP = 2, WAIT_GRID = 3, EXITED = 4, WAIT_ACTIVE = 5 };

typedef void (*block_fn_t)(void **params);
typedef void (*thread_fn_t)(void **params);

typedef struct {
    void *block_fn;
    void *thread_fn;
    void **params;
    int32_t grid[3];
    int32_t block[3];
    int32_t mode;
    int32_t pad;
    int64_t shared_bytes;   /* per block */
    /* out: what went wrong */
    int32_t err_kind;
    int32_t err_site;       /* the barrier site the waiting thread is at */
    int32_t err_other_site; /* the other barrier (ERR_BARRIER_MISMATCH) */
    int32_t err_exited;     /* threads of the block that had exited */
    int32_t err_block[3];
    int32_t err_thread[3];
    int32_t err_lane_mask;  /* a warp operation: the lanes it waited for */
    int32_t pad2;
    /* memcheck: the allocations a global access may touch, [start, end) sorted by start */
    const uint64_t *ranges;
    int64_t n_ranges;
    int64_t static_shared_bytes; /* of shared_bytes: the static arrays (the rest is dynamic) */
    uint64_t err_address;
    int64_t err_size;
    int32_t err_access;      /* 0 read, 1 write, 2 atomic */
    int32_t err_space;       /* 1 global, 3 shared */
    int32_t checks;          /* CHECK_* of the instrumented build's launch */
    int32_t err_other_thread;/* racecheck: the other access's thread (linear in its block) */
    int32_t err_other_access;
    int32_t err_linear;      /* the reporting thread, linear in its block */
    int64_t err_offset;      /* racecheck / initcheck: the byte's offset in the block's shared memory */
    int32_t err_other_block[3]; /* racecheck of global memory: the other access's block */
    int32_t pad3;
    int64_t err_local_bytes; /* memcheck of a local array (err_space 0): its bytes; err_offset the access's offset */
} launch_t;

/* ---- the fiber switch ---------------------------------------------------------------------- */

#if defined(__x86_64__)
/* oxide_cpu_switch(void **save, void *to): saves the callee-saved registers on this stack and
 * the stack pointer in *save, then continues the fiber whose stack pointer is `to`. */
void oxide_cpu_switch(void **save, void *to);
void oxide_cpu_trampoline(void);
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".type oxide_cpu_switch,@function\n"
    "oxide_cpu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size oxide_cpu_switch, .-oxide_cpu_switch\n"
    ".p2align 4\n"
    ".type oxide_cpu_trampoline,@function\n"
    "oxide_cpu_trampoline:\n"
    "  movq %r13, %rdi\n"
    "  callq *%r12\n"
    "  ud2\n"
    ".size oxide_cpu_trampoline, .-oxide_cpu_trampoline\n");

typedef void *fiber_sp_t;

/* a new fiber that starts in fn(arg) on the stack whose top is `top` */
static fiber_sp_t fiber_make(char *top, void (*fn)(intptr_t), intptr_t arg) {
    uintptr_t t = ((uintptr_t)top) & ~(uintptr_t)15;
    void **sp = (void **)t;
    *--sp = (void *)oxide_cpu_trampoline; /* at t - 8: the ret of the first switch */
    *--sp = 0;                            /* rbp */
    *--sp = 0;                            /* rbx */
    *--sp = (void *)fn;                   /* r12 */
    *--sp = (void *)arg;                  /* r13 */
    *--sp = 0;                            /* r14 */
    *--sp = 0;                            /* r15 */
    return (fiber_sp_t)sp;
}
#define SWITCH(save, to) oxide_cpu_switch((save), (to))
#else
typedef ucontext_t *fiber_sp_t;
static ucontext_t *contexts;
static void fiber_entry_uc(unsigned hi, unsigned lo, unsigned fhi, unsigned flo) {
    intptr_t arg = (intptr_t)(((uint64_t)hi << 32) | lo);
    void (*fn)(intptr_t) = (void (*)(intptr_t))(((uint64_t)fhi << 32) | flo);
    fn(arg);
    abort();
}
#endif

/* ---- the state of one launch ---------------------------------------------------------------- */

static launch_t *L;
static int64_t n_fibers;           /* fibers of the launch: a block's threads, or the grid's */
static int64_t block_threads;
static char *stacks;               /* n_fibers stacks of STACK_BYTES, reused between launches */
static size_t stacks_bytes;
static size_t stack_bytes;
static char *shared_mem;           /* one segment per block that runs at once */
static size_t shared_mem_bytes;

#if defined(__x86_64__)
static void **fiber_sp;            /* the saved stack pointer of each fiber */
static void *scheduler_sp;
#else
static ucontext_t scheduler_uc;
#endif
static int32_t *state;             /* WAIT_* of each fiber */
static int32_t *fiber_tid;         /* [fiber][3]: its thread index in its block */
static int32_t *site;              /* the barrier a waiting fiber is at */
static int32_t *parity;            /* the warp-exchange buffer each lane uses next */
static uint64_t *slots;            /* [2][warps][32]: the values lanes hand a warp operation */
static uint32_t *warp_arrived;     /* [2][warps]: lanes arrived at the warp operation */
static uint32_t *warp_waiting_mask;/* [fiber]: the mask a waiting lane waits for */
static int32_t *arrived;           /* [blocks]: threads at the block barrier */
static int32_t *barrier_site;      /* [blocks]: the barrier they wait at */
static int32_t *live;              /* [blocks]: threads a barrier waits for: all but those a failed check ended */
static int32_t *exited;            /* [blocks]: threads that returned */
static int64_t *vote;              /* [blocks][2]: the block vote's sum, by barrier parity */
static int32_t *vote_parity;       /* [blocks] */
static int64_t grid_arrived, grid_live;
static int32_t grid_site;
static int64_t current;            /* the fiber running */
static uint32_t *barrier_epoch;    /* racecheck: [blocks] block barriers completed + 1 */
static uint32_t *warp_gen;         /* racecheck: [warps] warp operations completed */
static uint32_t global_grid_epoch; /* racecheck: grid barriers completed (_global_races.h) */
static int64_t warps_per_block;
static int aborted;                /* a trap: stop the launch */
static int checks_failed;          /* a thread ended at a failed check (its record is written) */
static size_t work_bytes;
static char *work;

static int64_t block_of(int64_t f) { return f / block_threads; }

static void set_context(int64_t f) {
    memcpy(oxide_cpu_context.tid, fiber_tid + 3 * f, sizeof oxide_cpu_context.tid);
    if (L->mode == MODE_COOPERATIVE) {
        int64_t b = f / block_threads;
        int32_t gx = L->grid[0], gy = L->grid[1];
        oxide_cpu_context.ctaid[0] = (int32_t)(b % gx);
        oxide_cpu_context.ctaid[1] = (int32_t)((b / gx) % gy);
        oxide_cpu_context.ctaid[2] = (int32_t)(b / ((int64_t)gx * gy));
        oxide_cpu_context.shared = shared_mem + (size_t)b * (size_t)L->shared_bytes;
    }
}

static void yield_to_scheduler(void) {
#if defined(__x86_64__)
    SWITCH(&fiber_sp[current], scheduler_sp);
#else
    swapcontext(&contexts[current], &scheduler_uc);
#endif
}

static void leave_forever(void) {
#if defined(__x86_64__)
    void *dead;
    SWITCH(&dead, scheduler_sp);
#else
    setcontext(&scheduler_uc);
#endif
    abort();
}

EXPORT void oxide_cpu_exit_thread(void);

static void fail(int kind, int64_t f, int32_t at, int32_t other) {
    if (L->err_kind != OK) return;
    int64_t t = f % block_threads, b = f / block_threads;
    int32_t bx = L->block[0], by = L->block[1], gx = L->grid[0], gy = L->grid[1];
    L->err_kind = kind;
    L->err_site = at;
    L->err_other_site = other;
    L->err_thread[0] = (int32_t)(t % bx);
    L->err_thread[1] = (int32_t)((t / bx) % by);
    L->err_thread[2] = (int32_t)(t / ((int64_t)bx * by));
    if (L->mode == MODE_COOPERATIVE) {
        L->err_block[0] = (int32_t)(b % gx);
        L->err_block[1] = (int32_t)((b / gx) % gy);
        L->err_block[2] = (int32_t)(b / ((int64_t)gx * gy));
    } else {
        memcpy(L->err_block, oxide_cpu_context.ctaid, sizeof L->err_block);
    }
    L->err_exited = exited[L->mode == MODE_COOPERATIVE ? b : 0];
}

/* ---- what the kernels call ------------------------------------------------------------------ */

/* A block barrier (block.sync(), and the block votes through oxide_cpu_block_vote). */
EXPORT void oxide_cpu_barrier(int32_t at) {
    int64_t f = current, b = L->mode == MODE_COOPERATIVE ? block_of(f) : 0;
    if (arrived[b] == 0) {
        barrier_site[b] = at;
    } else if (barrier_site[b] != at) {
        fail(ERR_BARRIER_MISMATCH, f, at, barrier_site[b]);
        aborted = 1;
        leave_forever();
    }
    if (++arrived[b] == live[b]) { /* the last one: release the others and carry on */
        int64_t first = b * block_threads;
        arrived[b] = 0;
        if (barrier_epoch) barrier_epoch[b]++;
        for (int64_t g = first; g < first + block_threads; g++)
            if (state[g] == WAIT_BARRIER) state[g] = WAIT_NONE;
        return;
    }
    state[f] = WAIT_BARRIER;
    site[f] = at;
    yield_to_scheduler();
}

/* block.sync_count / _and / _or: the number of threads whose predicate holds (and/or test it
 * against the block's size on the Python side of the lowering). */
EXPORT int32_t oxide_cpu_block_vote(int32_t at, int32_t pred) {
    int64_t b = L->mode == MODE_COOPERATIVE ? block_of(current) : 0;
    int32_t p = vote_parity[b];
    if (arrived[b] == 0) vote[2 * b + p] = 0;
    vote[2 * b + p] += pred != 0;
    if (arrived[b] + 1 == live[b]) vote_parity[b] ^= 1; /* the next vote uses the other sum */
    oxide_cpu_barrier(at);
    return (int32_t)vote[2 * b + p];
}

/* A warp operation's exchange: the lane hands over `value` and waits until every lane of
 * `mask` has; the result points at the 32 values of this operation (one per lane of the warp).
 * Two buffers, alternating per lane: a lane released from one operation may write the next
 * one's value before the slowest lane has read this one's. */
EXPORT const uint64_t *oxide_cpu_warp_exchange(uint32_t mask, uint64_t value) {
    int64_t f = current;
    int64_t lane_index = f % block_threads;
    int64_t warp = block_of(f) * warps_per_block + lane_index / 32;
    int32_t lane = (int32_t)(lane_index % 32);
    int32_t p = parity[f];
    parity[f] ^= 1;
    uint64_t *buffer = slots + ((size_t)p * (size_t)(n_fibers / block_threads * warps_per_block) + (size_t)warp) * 32;
    uint32_t *arrivals = warp_arrived + (size_t)p * (size_t)(n_fibers / block_threads * warps_per_block) + warp;
    buffer[lane] = value;
    int64_t lanes_here = block_threads - (lane_index - lane); /* a block's last warp may be partial */
    if (lanes_here < 32) mask &= (1u << lanes_here) - 1;
    mask |= 1u << lane;
    *arrivals |= 1u << lane;
    if ((*arrivals & mask) == mask) {
        int64_t first = f - lane;
        *arrivals &= ~mask;
        if (warp_gen) warp_gen[warp]++;
        for (int l = 0; l < 32; l++)
            if ((mask >> l & 1) && l != lane && state[first + l] == WAIT_WARP) state[first + l] = WAIT_NONE;
        return buffer;
    }
    state[f] = WAIT_WARP;
    warp_waiting_mask[f] = mask;
    yield_to_scheduler();
    return buffer;
}

/* warp.active_mask(): the lanes of the thread's warp executing this call together. The lane
 * waits at the call (site `at`) until no thread of the launch can run on (the others wait at a
 * barrier, a warp operation or this call, or returned); then the lanes of its warp waiting at
 * this site are the mask, given to each of them (release_active_masks). Lanes that took
 * another branch, or returned, are not in it, as on the GPU; no lane waits for another that
 * may never come. */
EXPORT uint32_t oxide_cpu_active_mask(int32_t at) {
    int64_t f = current;
    state[f] = WAIT_ACTIVE;
    site[f] = at;
    yield_to_scheduler();
    return warp_waiting_mask[f];
}

/* Releases every lane waiting in warp.active_mask(), each warp's lanes at one site together;
 * whether any was waiting. */
static int release_active_masks(void) {
    int released = 0;
    for (int64_t f = 0; f < n_fibers; f++) {
        if (state[f] != WAIT_ACTIVE) continue;
        int64_t lane_index = f % block_threads, first = f - lane_index % 32;
        int64_t lanes = block_threads - (lane_index - lane_index % 32);
        uint32_t mask = 0;
        for (int64_t l = 0; l < 32 && l < lanes; l++)
            if (state[first + l] == WAIT_ACTIVE && site[first + l] == site[f]) mask |= 1u << l;
        for (int64_t l = 0; l < 32 && l < lanes; l++)
            if (mask >> l & 1) {
                state[first + l] = WAIT_NONE;
                warp_waiting_mask[first + l] = mask;
            }
        released = 1;
    }
    return released;
}

/* timer.nanosleep(): the launch's other threads run before this one goes on (its kernel runs
 * on fibers: codegen's Role.YIELDS). */
EXPORT void oxide_cpu_yield(void) {
    if (L->mode != MODE_LOOP) yield_to_scheduler();
}

/* grid.sync() of a cooperative launch: every thread of the grid. */
EXPORT void oxide_cpu_grid_sync(int32_t at) {
    int64_t f = current;
    if (grid_arrived == 0) grid_site = at;
    if (++grid_arrived == grid_live) {
        grid_arrived = 0;
        if (barrier_epoch)
            for (int64_t b = 0; b < n_fibers / block_threads; b++) barrier_epoch[b]++;
        global_grid_epoch++;
        for (int64_t g = 0; g < n_fibers; g++)
            if (state[g] == WAIT_GRID) state[g] = WAIT_NONE;
        return;
    }
    state[f] = WAIT_GRID;
    site[f] = at;
    yield_to_scheduler();
}

/* A thread returned: a barrier still waits for it (a barrier its block's other threads wait
 * at then never completes: synccheck). */
static void thread_exited(int64_t f) {
    int64_t b = L->mode == MODE_COOPERATIVE ? block_of(f) : 0;
    state[f] = EXITED;
    exited[b]++;
}

/* A failed check ended the thread (after writing the error record): as on the GPU, the
 * barriers it no longer reaches complete without it. */
EXPORT void oxide_cpu_exit_thread(void) {
    checks_failed = 1;
    if (L->mode != MODE_LOOP) {
        int64_t f = current, b = L->mode == MODE_COOPERATIVE ? block_of(f) : 0;
        state[f] = EXITED;
        live[b]--;
        grid_live--;
        int64_t first = b * block_threads;
        if (arrived[b] > 0 && arrived[b] == live[b]) {
            arrived[b] = 0;
            if (barrier_epoch) barrier_epoch[b]++;
            for (int64_t g = first; g < first + block_threads; g++)
                if (state[g] == WAIT_BARRIER) state[g] = WAIT_NONE;
        }
        if (grid_arrived > 0 && grid_arrived == grid_live) {
            grid_arrived = 0;
            for (int64_t g = 0; g < n_fibers; g++)
                if (state[g] == WAIT_GRID) state[g] = WAIT_NONE;
        }
    }
    leave_forever();
}

/* A failed check with no error record to write: the GPU traps, which ends the launch. */
EXPORT void oxide_cpu_trap(void) {
    aborted = 1;
    if (L->err_kind == OK) {
        fail(ERR_TRAP, current, 0, 0);
    }
    leave_forever();
}

EXPORT void oxide_cpu_flush(void) { fflush(stdout); }

/* ---- fp8 conversions (PTX's cvt.rn.satfinite.{e4m3,e5m2}x2.f32 and cvt.rn.f16x2.*x2) ------ */

static void fp8_format(int32_t e5m2, int *mantissa, int *bias, double *largest) {
    *mantissa = e5m2 ? 2 : 3;
    *bias = e5m2 ? 15 : 7;
    *largest = e5m2 ? 57344.0 : 448.0;
}

EXPORT int32_t oxide_cpu_to_fp8(float value, int32_t e5m2) {
    int m, bias;
    double largest;
    fp8_format(e5m2, &m, &bias, &largest);
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    int32_t sign = (int32_t)(bits >> 24) & 0x80;
    if (value != value) return 0x7F; /* NaN (both formats' canonical one) */
    double a = fabs((double)value);
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): the leading bit's exponent is e - 1 */
    int lead = a == 0.0 ? 1 - bias : e - 1;
    if (lead < 1 - bias) lead = 1 - bias; /* subnormals share the smallest exponent's quantum */
    double quantum = ldexp(1.0, lead - m);
    double rounded = nearbyint(a / quantum) * quantum; /* to nearest, ties to even */
    if (rounded > largest) rounded = largest; /* satfinite (infinities too) */
    if (rounded == 0.0) return sign;
    frexp(rounded, &e);
    int exponent = e - 1;
    int32_t code;
    if (exponent < 1 - bias) { /* subnormal */
        code = (int32_t)(rounded / ldexp(1.0, 1 - bias - m));
    } else {
        int32_t frac = (int32_t)((rounded / ldexp(1.0, exponent) - 1.0) * (1 << m));
        code = ((exponent + bias) << m) | frac;
    }
    return sign | code;
}

EXPORT float oxide_cpu_from_fp8(int32_t byte, int32_t e5m2) {
    int m, bias;
    double largest;
    fp8_format(e5m2, &m, &bias, &largest);
    int32_t sign = byte & 0x80, exponent = (byte & 0x7F) >> m, frac = byte & ((1 << m) - 1);
    double v;
    if (!e5m2 && (byte & 0x7F) == 0x7F) {
        v = NAN;
    } else if (e5m2 && exponent == 31) {
        v = frac ? NAN : INFINITY;
    } else if (exponent == 0) {
        v = ldexp((double)frac, 1 - bias - m);
    } else {
        v = ldexp(1.0 + (double)frac / (1 << m), exponent - bias);
    }
    return (float)(sign ? -v : v);
}

/* ---- the half-precision conversions LLVM calls on x86-64 ----------------------------------- */

/* LLVM lowers a conversion x86 has no instruction for (f64 -> f16, f32/f64 -> bf16, and f32 <->
 * f16 without F16C) to compiler-rt's __truncdfhf2 & co., which a process need not have (libgcc
 * has some, not the bf16 ones): MCJIT would resolve them to address 0. These are registered in
 * their place. Rounded once, to nearest even, as PTX's cvt.rn; NaN stays a (quiet) NaN; past the
 * largest finite value, infinity. Halves travel in the low 16 bits of an XMM register (the
 * x86-64 ABI of _Float16 and __bf16), so here as the low bits of a float. */
static uint16_t narrow_f64(double x, int mbits, int ebits) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t sign = (uint32_t)(u >> 63) << (mbits + ebits);
    uint64_t mag = u & 0x7FFFFFFFFFFFFFFFull;
    uint32_t inf = ((1u << ebits) - 1) << mbits;
    if (mag > 0x7FF0000000000000ull)
        return (uint16_t)(sign | inf | (1u << (mbits - 1)) | (uint32_t)((mag >> (52 - mbits)) & ((1u << mbits) - 1)));
    if (mag == 0x7FF0000000000000ull) return (uint16_t)(sign | inf);
    if ((mag >> 52) == 0) return (uint16_t)sign; /* an f64 subnormal: far below half the least half */
    int bias = (1 << (ebits - 1)) - 1;
    int te = (int)(mag >> 52) - 1023 + bias;  /* the target's biased exponent */
    uint64_t m = (mag & ((1ull << 52) - 1)) | (1ull << 52);
    int shift = 52 - mbits + (te >= 1 ? 0 : 1 - te);
    if (shift > 53) return (uint16_t)sign;   /* below half the least subnormal */
    uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    uint64_t bits = te >= 1 ? ((uint64_t)te << mbits) + q - (1ull << mbits) : q; /* a carry moves the exponent */
    if (bits >= inf) return (uint16_t)(sign | inf);
    return (uint16_t)(sign | (uint32_t)bits);
}

static float half_in_xmm(uint16_t bits) {
    uint32_t word = bits;
    float f;
    memcpy(&f, &word, sizeof f);
    return f;
}

static uint16_t half_of_xmm(float f) {
    uint32_t word;
    memcpy(&word, &f, sizeof word);
    return (uint16_t)word;
}

static float truncdfhf2(double x) { return half_in_xmm(narrow_f64(x, 10, 5)); }
static float truncsfhf2(float x) { return half_in_xmm(narrow_f64((double)x, 10, 5)); }
static float truncdfbf2(double x) { return half_in_xmm(narrow_f64(x, 7, 8)); }
static float truncsfbf2(float x) { return half_in_xmm(narrow_f64((double)x, 7, 8)); }
static float extendhfsf2(float h) {
    uint16_t b = half_of_xmm(h);
    int exponent = (b >> 10) & 0x1F, frac = b & 0x3FF;
    float v = exponent == 0 ? ldexpf((float)frac, -24)
              : exponent == 31 ? (frac ? NAN : INFINITY) : ldexpf((float)(frac | 0x400), exponent - 25);
    return (b & 0x8000) ? -v : v;
}

/* memcheck's hook, before every global and shared access of an instrumented module: an access
 * outside every allocation of its space is reported (the first one of the launch) and ends the
 * thread before it touches memory. */
/* racecheck's and initcheck's record of one byte of shared memory */
typedef struct {
    int32_t w_thread, w_site, r_thread[2], r_site[2];
    uint32_t w_epoch, w_gen, r_epoch[2], r_gen[2];
    uint8_t init, w_access, r_relaxed[2]; /* the last write's access code (1, 2 or 4); each read's: volatile */
} shadow_t;

static shadow_t *shadow;           /* [blocks of the set][shared bytes] */
static size_t shadow_bytes;

static int64_t current_thread(void) {
    return L->mode == MODE_LOOP ? oxide_cpu_context.position : current % block_threads;
}

static int report(int kind, int32_t at, int32_t access, int64_t offset, int32_t other_thread, int32_t other_site,
                  int32_t other_access) {
    if (L->err_kind != OK) return 0;
    fail(kind, current, at, other_site);
    if (L->mode == MODE_LOOP) memcpy(L->err_thread, oxide_cpu_context.tid, sizeof L->err_thread);
    L->err_linear = (int32_t)current_thread();
    L->err_access = access;
    L->err_offset = offset;
    L->err_other_thread = other_thread;
    L->err_other_access = other_access;
    return 1;
}

/* Whether the access of thread `t` now comes after thread `other`'s, which happened in barrier
 * epoch `epoch` and warp generation `gen`: a block barrier since, or the same thread, or a warp
 * operation of their warp since (lanes of one warp are ordered by their warp operations). */
static int ordered(int64_t t, int32_t other, uint32_t epoch, uint32_t gen, uint32_t now, int64_t warp0) {
    if (other == t || epoch != now) return 1;
    return other / 32 == t / 32 && warp_gen[warp0 + t / 32] > gen;
}

/* Whether a write's bytes differ from what memory holds at `address` (the last write's bytes):
 * two unordered writes of one value leave the same result in either order and are not a race;
 * `value` NULL (a read-modify-write, whose result depends on the order) always differs. */
static int writes_other_value(const uint8_t *value, const uint8_t *address) {
    return value == NULL || *value != *address;
}

/* access: 0 read, 1 write, 2 atomic read-modify-write (relaxed loads and stores come as 0 and 1
 * with `relaxed` set); value: a store's bytes, else NULL */
static void check_shared(uint64_t offset, int64_t size, int32_t access, int32_t at, int relaxed,
                         const uint8_t *value) {
    int64_t b = L->mode == MODE_COOPERATIVE ? block_of(current) : 0;
    int64_t t = current_thread();
    uint32_t now = barrier_epoch[b];
    int64_t warp0 = b * warps_per_block;
    uint32_t gen = warp_gen[warp0 + t / 32];
    shadow_t *sh = shadow + (size_t)b * (size_t)L->shared_bytes + offset;
    for (int64_t k = 0; k < size; k++, sh++) {
        if ((L->checks & CHECK_INIT) && access != 1 && !sh->init) {
            if (report(ERR_UNINITIALIZED, at, access, (int64_t)offset + k, -1, -1, 0)) return;
        }
        if (!(L->checks & CHECK_RACES)) {
            if (access != 0) sh->init = 1;
            continue;
        }
        /* a read after another thread's write (not a volatile read after a volatile or atomic write) */
        if (access == 0 && sh->w_epoch == now && !(relaxed && sh->w_access != 1) &&
            !ordered(t, sh->w_thread, sh->w_epoch, sh->w_gen, now, warp0)) {
            report(ERR_RACE, at, relaxed ? 3 : access, (int64_t)offset + k, sh->w_thread, sh->w_site, sh->w_access);
            return;
        }
        /* a write (or atomic) after another thread's write: a race unless both are atomic or
         * the write stores the byte the other left there (see writes_other_value) */
        int atomic = access == 2 || relaxed;
        if (access != 0 && sh->w_epoch == now && !(atomic && sh->w_access != 1) &&
            !ordered(t, sh->w_thread, sh->w_epoch, sh->w_gen, now, warp0) &&
            writes_other_value(value ? value + k : NULL, (const uint8_t *)oxide_cpu_context.shared + offset + k)) {
            /* named by the store's first byte (the one found may lie inside the value) */
            report(ERR_RACE, at, relaxed ? 4 : access, (int64_t)offset, sh->w_thread, sh->w_site, sh->w_access);
            return;
        }
        if (access != 0) {
            for (int r = 0; r < 2; r++)
                if (sh->r_epoch[r] == now && !(atomic && sh->r_relaxed[r]) &&
                    !ordered(t, sh->r_thread[r], sh->r_epoch[r], sh->r_gen[r], now, warp0)) {
                    report(ERR_RACE, at, relaxed ? 4 : access, (int64_t)offset + k, sh->r_thread[r], sh->r_site[r],
                           sh->r_relaxed[r] ? 3 : 0);
                    return;
                }
            sh->w_thread = (int32_t)t;
            sh->w_site = at;
            sh->w_epoch = now;
            sh->w_gen = gen;
            sh->w_access = (uint8_t)(relaxed ? 4 : access);
            sh->r_epoch[0] = sh->r_epoch[1] = 0;
            sh->init = 1;
        } else {
            int r = sh->r_epoch[0] == now && sh->r_thread[0] != t ? 1 : 0;
            sh->r_thread[r] = (int32_t)t;
            sh->r_site[r] = at;
            sh->r_epoch[r] = now;
            sh->r_gen[r] = gen;
            sh->r_relaxed[r] = (uint8_t)relaxed;
        }
    }
}

#include "_global_races.h"

/* access: 0 read, 1 write, 2 atomic read-modify-write, 3 atomic or volatile load, 4 atomic or
 * volatile store (global memory tells them apart for release/acquire; in shared memory 3 and 4
 * are a read and a write that do not race with atomics); value: the bytes a store (1, 4) writes,
 * else NULL (racecheck tells a write of the value already there from one that changes it) */
EXPORT void oxide_cpu_access(const char *address, int64_t size, int32_t access, int32_t at, int32_t space,
                              const uint8_t *value) {
    uint64_t a = (uint64_t)(uintptr_t)address, end = a + (uint64_t)size;
    if (space == 3) {
        int relaxed = access >= 3;
        if (relaxed) access -= 3;
        uint64_t base = (uint64_t)(uintptr_t)oxide_cpu_context.shared;
        if (a >= base && end <= base + (uint64_t)L->shared_bytes) {
            if (L->checks & (CHECK_RACES | CHECK_INIT)) check_shared(a - base, size, access, at, relaxed, value);
            return;
        }
        if (!(L->checks & CHECK_MEMORY)) return;
    } else {
        if (!(L->checks & (CHECK_MEMORY | CHECK_RACES))) return;
        int64_t lo = 0, hi = L->n_ranges; /* the last range starting at or before a */
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (L->ranges[2 * mid] <= a) lo = mid + 1; else hi = mid;
        }
        if (lo > 0 && end <= L->ranges[2 * (lo - 1) + 1]) {
            if ((L->checks & CHECK_RACES) && check_global(lo - 1, a, size, access, at, value)) oxide_cpu_exit_thread();
            return;
        }
        if (!(L->checks & CHECK_MEMORY)) return;
    }
    if (L->err_kind == OK) {
        fail(ERR_MEMCHECK, current, at, 0);
        if (L->mode == MODE_LOOP) { /* the loop form's thread: from the context */
            memcpy(L->err_thread, oxide_cpu_context.tid, sizeof L->err_thread);
        }
        L->err_address = a;
        L->err_size = size;
        L->err_access = access;
        L->err_space = space;
    }
    oxide_cpu_exit_thread();
}

/* memcheck of a local array indexed at run time: [address, address + size) inside the array's
 * `bytes` at `base` (the instrumentation passes them), else reported and the thread ends. */
EXPORT void oxide_cpu_local_access(const char *address, int64_t size, int32_t access, int32_t at, const char *base,
                                   int64_t bytes) {
    if (!(L->checks & CHECK_MEMORY) || (address >= base && address + size <= base + bytes)) return;
    if (L->err_kind == OK) {
        fail(ERR_MEMCHECK, current, at, 0);
        if (L->mode == MODE_LOOP) memcpy(L->err_thread, oxide_cpu_context.tid, sizeof L->err_thread);
        L->err_address = (uint64_t)(uintptr_t)address;
        L->err_size = size;
        L->err_access = access;
        L->err_space = 0;
        L->err_offset = (int64_t)(address - base);
        L->err_local_bytes = bytes;
    }
    oxide_cpu_exit_thread();
}

/* ---- running a launch -------------------------------------------------------------------- */

static void fiber_main(intptr_t f) {
    ((thread_fn_t)L->thread_fn)(L->params);
    thread_exited((int64_t)f);
    leave_forever();
}

static void loop_main(intptr_t unused) {
    (void)unused;
    ((block_fn_t)L->block_fn)(L->params);
    oxide_cpu_context.position = -1; /* done */
    leave_forever();
}

static void start_fiber(int64_t f, void (*fn)(intptr_t)) {
    /* the stacks' tops staggered by a few cache lines: at one stride apart, every fiber's frame
     * would fall in the same cache sets (the switches then miss at every step) */
    char *top = stacks + (size_t)(f + 1) * stack_bytes - (size_t)(f % 61) * 208;
#if defined(__x86_64__)
    fiber_sp[f] = fiber_make(top, fn, (intptr_t)f);
#else
    ucontext_t *uc = &contexts[f];
    getcontext(uc);
    uc->uc_stack.ss_sp = top - stack_bytes;
    uc->uc_stack.ss_size = stack_bytes;
    uc->uc_link = NULL;
    uint64_t a = (uint64_t)f, p = (uint64_t)(uintptr_t)fn;
    makecontext(uc, (void (*)(void))fiber_entry_uc, 4, (unsigned)(a >> 32), (unsigned)a, (unsigned)(p >> 32), (unsigned)p);
#endif
}

static void resume(int64_t f) {
    current = f;
#if defined(__x86_64__)
    SWITCH(&scheduler_sp, fiber_sp[f]);
#else
    swapcontext(&scheduler_uc, &contexts[f]);
#endif
}

#define GUARDED_FIBERS 8192

static int reserve(size_t fibers, size_t per_stack, size_t shared_total) {
    size_t need = fibers * per_stack;
    if (need > stacks_bytes || per_stack != stack_bytes) {
        if (stacks) munmap(stacks, stacks_bytes);
        stacks = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (stacks == MAP_FAILED) { stacks = NULL; stacks_bytes = 0; return 0; }
        stacks_bytes = need;
        stack_bytes = per_stack;
        /* a guard page at the bottom of each stack: a thread whose frames outgrow its stack
         * faults there rather than write over its neighbour's. Each splits the mapping, and a
         * process has some 65,000 mappings: a block's fibers get them, a cooperative grid's
         * beyond GUARDED_FIBERS do not (their mappings would starve every later mmap, the JIT's) */
        if (fibers <= GUARDED_FIBERS)
            for (size_t f = 0; f < fibers; f++) mprotect(stacks + f * per_stack, 4096, PROT_NONE);
    }
    if (shared_total > shared_mem_bytes || shared_mem == NULL) {
        free(shared_mem);
        shared_mem = aligned_alloc(1024, (shared_total + 1024) & ~(size_t)1023);
        if (!shared_mem) { shared_mem_bytes = 0; return 0; }
        shared_mem_bytes = shared_total;
    }
    size_t warps = (fibers + 31) / 32; /* `fibers` is a whole number of warps per block */
    size_t bytes = fibers * (sizeof(void *) + 6 * sizeof(int32_t) + sizeof(uint32_t))
        + 2 * warps * 32 * sizeof(uint64_t) + 2 * warps * sizeof(uint32_t)
        + fibers * (4 * sizeof(int32_t) + 2 * sizeof(int64_t) + sizeof(int32_t)) + 512;
#if !defined(__x86_64__)
    bytes += fibers * sizeof(ucontext_t);
#endif
    if (bytes > work_bytes) {
        free(work);
        work = malloc(bytes);
        if (!work) { work_bytes = 0; return 0; }
        work_bytes = bytes;
    }
    memset(work, 0, bytes);
    char *p = work;
#define TAKE(ptr, type, count) do { ptr = (type *)p; p += ((sizeof(type) * (count)) + 15) & ~(size_t)15; } while (0)
#if defined(__x86_64__)
    TAKE(fiber_sp, void *, fibers);
#else
    TAKE(contexts, ucontext_t, fibers);
#endif
    TAKE(state, int32_t, fibers);
    TAKE(fiber_tid, int32_t, 3 * fibers);
    TAKE(site, int32_t, fibers);
    TAKE(parity, int32_t, fibers);
    TAKE(warp_waiting_mask, uint32_t, fibers);
    TAKE(slots, uint64_t, 2 * warps * 32);
    TAKE(warp_arrived, uint32_t, 2 * warps);
    TAKE(arrived, int32_t, fibers);
    TAKE(barrier_site, int32_t, fibers);
    TAKE(live, int32_t, fibers);
    TAKE(exited, int32_t, fibers);
    TAKE(vote, int64_t, 2 * fibers);
    TAKE(vote_parity, int32_t, fibers);
#undef TAKE
    return 1;
}

/* Runs the fibers [0, n_fibers) until all exited; a stall is a deadlock, reported. */
static void run_fibers(void) {
    int64_t blocks = n_fibers / block_threads;
    for (int64_t b = 0; b < blocks; b++) {
        live[b] = (int32_t)block_threads;
        exited[b] = 0;
    }
    grid_live = n_fibers;
    grid_arrived = 0;
    int32_t bx = L->block[0], by = L->block[1];
    for (int64_t f = 0; f < n_fibers; f++) {
        int64_t t = f % block_threads;
        fiber_tid[3 * f] = (int32_t)(t % bx);
        fiber_tid[3 * f + 1] = (int32_t)((t / bx) % by);
        fiber_tid[3 * f + 2] = (int32_t)(t / ((int64_t)bx * by));
        start_fiber(f, fiber_main);
    }
    for (;;) {
        int progress = 0, waiting = 0;
        for (int64_t f = 0; f < n_fibers; f++) {
            if (state[f] == WAIT_NONE) {
                set_context(f);
                resume(f);
                progress = 1;
                if (aborted) return;
            }
            if (state[f] != EXITED) waiting = 1;
        }
        if (!waiting) return;
        if (!progress && release_active_masks()) continue;
        if (!progress && checks_failed) {
            /* a thread ended at a failed check: as on the GPU, the barriers it no longer reaches
             * complete without it (the launch then raises that check's KernelError) */
            for (int64_t f = 0; f < n_fibers; f++)
                if (state[f] != EXITED) state[f] = WAIT_NONE;
            for (int64_t b = 0; b < blocks; b++) arrived[b] = 0;
            grid_arrived = 0;
            memset(warp_arrived, 0, 2 * sizeof(uint32_t) * (size_t)(blocks * warps_per_block));
            continue;
        }
        if (!progress) {
            for (int64_t f = 0; f < n_fibers; f++) {
                if (state[f] == WAIT_BARRIER || state[f] == WAIT_GRID) {
                    fail(ERR_DEADLOCK, f, site[f], state[f] == WAIT_GRID);
                    return;
                }
                if (state[f] == WAIT_WARP) {
                    fail(ERR_WARP_DEADLOCK, f, 0, 0);
                    L->err_lane_mask = (int32_t)warp_waiting_mask[f];
                    return;
                }
            }
            return;
        }
    }
}

/* The loop form: the block's threads in one native loop on a fiber's stack; when a failed
 * check abandons it, the rest of the block's threads run one by one (each as a fiber, so
 * another failure ends only its own thread). */
static void run_loop_block(void) {
    oxide_cpu_context.position = 0;
    start_fiber(0, loop_main);
    resume(0);
    while (!aborted && oxide_cpu_context.position >= 0) {
        int64_t next = oxide_cpu_context.position + 1;
        if (next >= block_threads) break;
        for (int64_t t = next; t < block_threads && !aborted; t++) {
            int32_t bx = L->block[0], by = L->block[1];
            oxide_cpu_context.tid[0] = (int32_t)(t % bx);
            oxide_cpu_context.tid[1] = (int32_t)((t / bx) % by);
            oxide_cpu_context.tid[2] = (int32_t)(t / ((int64_t)bx * by));
            oxide_cpu_context.position = t;
            state[0] = WAIT_NONE;
            start_fiber(0, fiber_main);
            resume(0);
        }
        break;
    }
}

EXPORT int oxide_cpu_launch(launch_t *launch) {
    L = launch;
    L->err_kind = OK;
    aborted = 0;
    checks_failed = 0;
    block_threads = (int64_t)L->block[0] * L->block[1] * L->block[2];
    int64_t blocks = (int64_t)L->grid[0] * L->grid[1] * L->grid[2];
    if (blocks == 0) return OK;
    warps_per_block = (block_threads + 31) / 32;
    int cooperative = L->mode == MODE_COOPERATIVE;
    n_fibers = L->mode == MODE_LOOP ? 1 : cooperative ? block_threads * blocks : block_threads;
    /* 256 KiB of stack per thread (a cooperative grid's: 128 KiB), address space only: pages are
     * committed as they are touched. Larger strides cost page-table walks at every switch
     * (1 MiB halved sgemm's speed); a thread whose frames outgrow it faults at its guard page. */
    size_t per_stack = cooperative ? (size_t)128 << 10 : (size_t)256 << 10;
    /* the warp buffers are per whole warp: reserve for n_fibers rounded to warps */
    size_t fibers_rounded = (size_t)(n_fibers / block_threads) * (size_t)warps_per_block * 32;
    if (fibers_rounded < (size_t)n_fibers) fibers_rounded = (size_t)n_fibers;
    size_t shared_total = (size_t)L->shared_bytes * (size_t)(cooperative ? blocks : 1);
    if (!reserve(fibers_rounded, per_stack, shared_total > 0 ? shared_total : 16)) {
        L->err_kind = ERR_NO_MEMORY;
        return L->err_kind;
    }
    free(barrier_epoch);
    free(warp_gen);
    barrier_epoch = NULL;
    warp_gen = NULL;
    if (L->checks & (CHECK_RACES | CHECK_INIT)) {
        size_t set_blocks = (size_t)(cooperative ? blocks : 1);
        size_t need = set_blocks * (size_t)L->shared_bytes * sizeof(shadow_t);
        if (need > shadow_bytes || shadow == NULL) {
            free(shadow);
            shadow = malloc(need ? need : 1);
            shadow_bytes = shadow ? need : 0;
        }
        barrier_epoch = calloc(set_blocks, sizeof(uint32_t));
        warp_gen = calloc(set_blocks * (size_t)warps_per_block, sizeof(uint32_t));
        if (!shadow || !barrier_epoch || !warp_gen) {
            L->err_kind = ERR_NO_MEMORY;
            return L->err_kind;
        }
        memset(shadow, 0, need);
        for (size_t b = 0; b < set_blocks; b++) barrier_epoch[b] = 1;
    }
    if ((L->checks & CHECK_RACES) && !global_races_begin(blocks, cooperative ? n_fibers : block_threads)) {
        global_races_end();
        L->err_kind = ERR_NO_MEMORY;
        return L->err_kind;
    }
    for (int a = 0; a < 3; a++) {
        oxide_cpu_context.ntid[a] = L->block[a];
        oxide_cpu_context.nctaid[a] = L->grid[a];
    }
    oxide_cpu_context.shared = shared_mem;
    if (cooperative) {
        memset(oxide_cpu_context.ctaid, 0, sizeof oxide_cpu_context.ctaid);
        memset(shared_mem, 0, shared_total);
        run_fibers();
    } else {
        for (int32_t z = 0; z < L->grid[2] && !aborted && L->err_kind == OK; z++)
            for (int32_t y = 0; y < L->grid[1] && !aborted && L->err_kind == OK; y++)
                for (int32_t x = 0; x < L->grid[0] && !aborted && L->err_kind == OK; x++) {
                    oxide_cpu_context.ctaid[0] = x;
                    oxide_cpu_context.ctaid[1] = y;
                    oxide_cpu_context.ctaid[2] = z;
                    if (L->shared_bytes) memset(shared_mem, 0, (size_t)L->shared_bytes);
                    if (barrier_epoch) { /* a new block: its shared memory unwritten, unread */
                        memset(shadow, 0, (size_t)L->shared_bytes * sizeof(shadow_t));
                        barrier_epoch[0] = 1;
                        memset(warp_gen, 0, sizeof(uint32_t) * (size_t)warps_per_block);
                        global_races_new_block(block_threads);
                    }
                    if (L->mode == MODE_LOOP) {
                        run_loop_block();
                    } else {
                        memset(state, 0, sizeof(int32_t) * (size_t)n_fibers);
                        memset(parity, 0, sizeof(int32_t) * (size_t)n_fibers);
                        memset(warp_arrived, 0, 2 * sizeof(uint32_t) * (size_t)warps_per_block);
                        arrived[0] = 0;
                        vote_parity[0] = 0;
                        run_fibers();
                    }
                }
    }
    fflush(stdout);
    global_races_end();
    return L->err_kind;
}

/* ---- the module: the addresses Python hands the JIT -------------------------------------- */

static PyObject *symbols(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
        "oxide_cpu_context", (unsigned long long)(uintptr_t)&oxide_cpu_context,
        "oxide_cpu_barrier", (unsigned long long)(uintptr_t)&oxide_cpu_barrier,
        "oxide_cpu_block_vote", (unsigned long long)(uintptr_t)&oxide_cpu_block_vote,
        "oxide_cpu_warp_exchange", (unsigned long long)(uintptr_t)&oxide_cpu_warp_exchange,
        "oxide_cpu_grid_sync", (unsigned long long)(uintptr_t)&oxide_cpu_grid_sync,
        "oxide_cpu_exit_thread", (unsigned long long)(uintptr_t)&oxide_cpu_exit_thread,
        "oxide_cpu_trap", (unsigned long long)(uintptr_t)&oxide_cpu_trap,
        "oxide_cpu_flush", (unsigned long long)(uintptr_t)&oxide_cpu_flush,
        "oxide_cpu_launch", (unsigned long long)(uintptr_t)&oxide_cpu_launch,
        "oxide_cpu_access", (unsigned long long)(uintptr_t)&oxide_cpu_access,
        "oxide_cpu_to_fp8", (unsigned long long)(uintptr_t)&oxide_cpu_to_fp8,
        "oxide_cpu_from_fp8", (unsigned long long)(uintptr_t)&oxide_cpu_from_fp8,
        "oxide_cpu_active_mask", (unsigned long long)(uintptr_t)&oxide_cpu_active_mask,
        "oxide_cpu_yield", (unsigned long long)(uintptr_t)&oxide_cpu_yield,
        "__truncdfhf2", (unsigned long long)(uintptr_t)&truncdfhf2,
        "__truncsfhf2", (unsigned long long)(uintptr_t)&truncsfhf2,
        "__truncdfbf2", (unsigned long long)(uintptr_t)&truncdfbf2,
        "__truncsfbf2", (unsigned long long)(uintptr_t)&truncsfbf2,
        "__extendhfsf2", (unsigned long long)(uintptr_t)&extendhfsf2,
        "oxide_cpu_fence", (unsigned long long)(uintptr_t)&oxide_cpu_fence,
        "oxide_cpu_local_access", (unsigned long long)(uintptr_t)&oxide_cpu_local_access);
}

static PyMethodDef methods[] = {
    {"symbols", symbols, METH_NOARGS, "The addresses of the scheduler's functions and context, by name."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fibers", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fibers(void) { return PyModule_Create(&module); }
