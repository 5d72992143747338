/* racecheck of global memory, for _fibers.c (included there, after the scheduler's state).
 *
 * Shadow: for each allocation of the launch (memcheck's ranges: the view arguments' elements
 * and the module's arrays) one record pair per 4-byte word: the last write and the last read,
 * each with the bytes of the word it touched (threads writing different bytes of a word do not
 * race), its block and thread, the block's barrier epoch and the warp's generation (as the
 * shared-memory check keeps them), the grid barriers so far and the block's release count.
 *
 * Two accesses race when they touch a common byte, one writes (two writes only when the second
 * changes a byte the first left: see check_global), not both are atomic
 * (an atomic read-modify-write, or an atomic or volatile load or store: PTX's relaxed
 * accesses) and nothing orders them:
 * - in one block, a block barrier or a warp operation of their warp between them (as in shared
 *   memory);
 * - in two blocks, a grid barrier between them, or release/acquire: an atomic or volatile store
 *   or read-modify-write of global memory by a thread that has executed a fence (ox.fence.*)
 *   releases its block's accesses so far at that address; an atomic or volatile load or
 *   read-modify-write by a thread that has executed a fence, or that executes one later,
 *   acquires what was released there (the threadfence reduction's ticket, a look-back scan's
 *   flags). Each block keeps a vector clock: per other block, how many of its releases it has
 *   acquired, directly or through others. Grids of more than GLOBAL_RACE_CLOCK_BLOCKS blocks
 *   keep none: their accesses of different blocks are taken as ordered.
 * Allocations larger than GLOBAL_RACE_MAX_BYTES (a view whose extent the kernel never reads)
 * are not tracked. */

#define GLOBAL_RACE_CLOCK_BLOCKS 4096
#define GLOBAL_RACE_MAX_BYTES ((uint64_t)1 << 32)
#define GLOBAL_RACE_PENDING 8

typedef struct {
    uint32_t block;  /* linear block + 1; 0: no access */
    uint32_t thread; /* linear in its block */
    uint32_t epoch, gen, grid_epoch, released;
    int32_t site;
    uint8_t mask, access, pad[2];
} global_record_t;

typedef struct {
    global_record_t w, r;
} global_shadow_t;

typedef struct {
    uint64_t address;
    uint32_t *clock; /* NULL: an empty slot */
} sync_object_t;

static global_shadow_t **global_shadow; /* [range] */
static int64_t global_ranges;
static uint32_t global_grid_epoch;
static int64_t global_blocks;
static uint32_t *release_count;    /* [blocks of the grid] */
static uint32_t *vector_clock;     /* [blocks][blocks], calloc'd: rows appear as blocks touch them */
static uint8_t *thread_fenced;     /* [threads of the set]: executed a fence */
static uint32_t *pending_count;    /* [threads of the set] */
static uint64_t *pending_address;  /* [threads][GLOBAL_RACE_PENDING]: atomic reads since its last fence */
static sync_object_t *sync_objects;
static size_t sync_capacity, sync_count;

static void global_races_end(void) {
    for (int64_t k = 0; k < global_ranges; k++) free(global_shadow[k]);
    free(global_shadow);
    free(release_count);
    free(vector_clock);
    free(thread_fenced);
    free(pending_count);
    free(pending_address);
    for (size_t i = 0; i < sync_capacity; i++) free(sync_objects[i].clock);
    free(sync_objects);
    global_shadow = NULL;
    global_ranges = 0;
    release_count = vector_clock = pending_count = NULL;
    thread_fenced = NULL;
    pending_address = NULL;
    sync_objects = NULL;
    sync_capacity = sync_count = 0;
}

/* The launch begins (racecheck on): 0 when out of memory. */
static int global_races_begin(int64_t blocks, int64_t set_threads) {
    global_races_end();
    global_blocks = blocks;
    global_grid_epoch = 0;
    global_ranges = L->n_ranges;
    global_shadow = calloc((size_t)global_ranges + 1, sizeof(global_shadow_t *));
    release_count = calloc((size_t)blocks, sizeof(uint32_t));
    thread_fenced = calloc((size_t)set_threads, 1);
    pending_count = calloc((size_t)set_threads, sizeof(uint32_t));
    pending_address = calloc((size_t)set_threads * GLOBAL_RACE_PENDING, sizeof(uint64_t));
    if (!global_shadow || !release_count || !thread_fenced || !pending_count || !pending_address) return 0;
    if (blocks <= GLOBAL_RACE_CLOCK_BLOCKS) {
        vector_clock = calloc((size_t)blocks * (size_t)blocks, sizeof(uint32_t));
        if (!vector_clock) return 0;
    }
    for (int64_t k = 0; k < global_ranges; k++) {
        uint64_t lo = L->ranges[2 * k] & ~(uint64_t)3, hi = L->ranges[2 * k + 1];
        if (hi - lo > GLOBAL_RACE_MAX_BYTES) continue;
        global_shadow[k] = calloc((size_t)((hi - lo + 3) / 4), sizeof(global_shadow_t)); /* zero pages until touched */
        if (!global_shadow[k]) return 0;
    }
    return 1;
}

/* A block of a non-cooperative launch begins: its threads have executed no fence yet. */
static void global_races_new_block(int64_t set_threads) {
    if (!thread_fenced) return;
    memset(thread_fenced, 0, (size_t)set_threads);
    memset(pending_count, 0, sizeof(uint32_t) * (size_t)set_threads);
}

static int64_t grid_block(void) {
    const int32_t *c = oxide_cpu_context.ctaid;
    return c[0] + (int64_t)L->grid[0] * (c[1] + (int64_t)L->grid[1] * c[2]);
}

static int64_t set_thread(void) {
    return (L->mode == MODE_COOPERATIVE ? block_of(current) * block_threads : 0) + current_thread();
}

static uint32_t *sync_object(uint64_t address) {
    if (2 * (sync_count + 1) > sync_capacity) {
        size_t capacity = sync_capacity ? 2 * sync_capacity : 256;
        sync_object_t *grown = calloc(capacity, sizeof(sync_object_t));
        if (!grown) return NULL;
        for (size_t i = 0; i < sync_capacity; i++) {
            if (!sync_objects[i].clock) continue;
            size_t j = (size_t)((sync_objects[i].address >> 2) * 0x9E3779B97F4A7C15ull >> 17) & (capacity - 1);
            while (grown[j].clock) j = (j + 1) & (capacity - 1);
            grown[j] = sync_objects[i];
        }
        free(sync_objects);
        sync_objects = grown;
        sync_capacity = capacity;
    }
    size_t j = (size_t)((address >> 2) * 0x9E3779B97F4A7C15ull >> 17) & (sync_capacity - 1);
    while (sync_objects[j].clock && sync_objects[j].address != address) j = (j + 1) & (sync_capacity - 1);
    if (!sync_objects[j].clock) {
        sync_objects[j].clock = calloc((size_t)global_blocks, sizeof(uint32_t));
        if (!sync_objects[j].clock) return NULL;
        sync_objects[j].address = address;
        sync_count++;
    }
    return sync_objects[j].clock;
}

static void acquire_at(int64_t b, uint64_t address) {
    uint32_t *s = sync_object(address), *mine = vector_clock + (size_t)b * (size_t)global_blocks;
    if (!s) return;
    for (int64_t k = 0; k < global_blocks; k++)
        if (s[k] > mine[k]) mine[k] = s[k];
}

static void release_at(int64_t b, uint64_t address) {
    uint32_t *s = sync_object(address), *mine = vector_clock + (size_t)b * (size_t)global_blocks;
    if (!s) return;
    mine[b] = ++release_count[b]; /* the block's accesses so far (released < this) */
    for (int64_t k = 0; k < global_blocks; k++)
        if (mine[k] > s[k]) s[k] = mine[k];
}

/* A fence (ox.fence.*) of the running thread: its later atomics release and acquire, and the
 * atomic reads it made since its last fence acquire now. */
EXPORT void oxide_cpu_fence(void) {
    if (!thread_fenced) return;
    int64_t t = set_thread(), b = grid_block();
    thread_fenced[t] = 1;
    if (vector_clock)
        for (uint32_t k = 0; k < pending_count[t]; k++) acquire_at(b, pending_address[(size_t)t * GLOBAL_RACE_PENDING + k]);
    pending_count[t] = 0;
}

static int global_atomic(int access) { return access >= 2; }
static int global_writes(int access) { return access == 1 || access == 2 || access == 4; }

/* whether the access of (block b, thread t; epoch, gen) comes after the record o */
static int global_ordered(const global_record_t *o, int64_t b, int64_t t, uint32_t epoch, uint32_t gen) {
    if ((int64_t)o->block - 1 == b) {
        if (o->thread == (uint32_t)t || o->epoch != epoch) return 1;
        return o->thread / 32 == (uint32_t)t / 32 && gen > o->gen;
    }
    if (o->grid_epoch != global_grid_epoch) return 1;
    if (!vector_clock) return 1;
    return vector_clock[(size_t)b * (size_t)global_blocks + (o->block - 1)] > o->released;
}

static int global_race(const global_record_t *o, uint64_t address, int64_t byte_offset, int32_t at, int32_t access) {
    if (L->err_kind != OK) return 1;
    report(ERR_RACE, at, access, byte_offset, (int32_t)o->thread, o->site, o->access);
    L->err_space = 1;
    L->err_address = address;
    int64_t ob = (int64_t)o->block - 1;
    L->err_other_block[0] = (int32_t)(ob % L->grid[0]);
    L->err_other_block[1] = (int32_t)((ob / L->grid[0]) % L->grid[1]);
    L->err_other_block[2] = (int32_t)(ob / ((int64_t)L->grid[0] * L->grid[1]));
    memcpy(L->err_block, oxide_cpu_context.ctaid, sizeof L->err_block);
    return 1;
}

/* racecheck of the global access [a, a + size) inside range `k` (access: 0 read, 1 write,
 * 2 atomic read-modify-write, 3 atomic/volatile load, 4 atomic/volatile store; value: the bytes
 * a store writes); 1: a race, reported (the caller ends the thread). */
static int check_global(int64_t k, uint64_t a, int64_t size, int32_t access, int32_t at, const uint8_t *value) {
    global_shadow_t *shadow_k = global_shadow ? global_shadow[k] : NULL;
    if (!shadow_k) return 0;
    int64_t b = grid_block(), t = current_thread(), slot = set_thread();
    int64_t set_b = L->mode == MODE_COOPERATIVE ? block_of(current) : 0;
    uint32_t epoch = barrier_epoch[set_b], gen = warp_gen[set_b * warps_per_block + t / 32];
    if (global_atomic(access) && vector_clock) {
        if (access != 4) { /* reads */
            if (thread_fenced[slot]) acquire_at(b, a);
            else if (pending_count[slot] < GLOBAL_RACE_PENDING)
                pending_address[(size_t)slot * GLOBAL_RACE_PENDING + pending_count[slot]++] = a;
        }
        if (access != 3 && thread_fenced[slot]) release_at(b, a);
    }
    uint64_t base = L->ranges[2 * k] & ~(uint64_t)3, end = a + (uint64_t)size;
    int atomic = global_atomic(access), writes = global_writes(access);
    for (uint64_t w = a & ~(uint64_t)3; w < end; w += 4) {
        uint8_t mask = 0;
        for (int j = 0; j < 4; j++)
            if (w + (uint64_t)j >= a && w + (uint64_t)j < end) mask |= (uint8_t)(1u << j);
        global_shadow_t *sh = shadow_k + (w - base) / 4;
        uint64_t first = w > a ? w : a; /* the access's first byte in this word */
        int64_t offset = (int64_t)(first - L->ranges[2 * k]);
        const global_record_t *last_w = sh->w.block && (sh->w.mask & mask) ? &sh->w : NULL;
        const global_record_t *last_r = sh->r.block && (sh->r.mask & mask) ? &sh->r : NULL;
        /* a read after another thread's write, a write after its read */
        if (access != 1 && access != 4 && last_w && !(atomic && global_atomic(last_w->access)) &&
            !global_ordered(last_w, b, t, epoch, gen))
            return global_race(last_w, first, offset, at, access);
        /* a store after another thread's write, unless both are atomic or it stores the bytes
         * the other left (a flag many threads set to one value ends the same in any order) */
        if ((access == 1 || access == 4) && last_w && !(atomic && global_atomic(last_w->access)) &&
            !global_ordered(last_w, b, t, epoch, gen)) {
            for (int j = 0; j < 4; j++) {
                uint64_t byte = w + (uint64_t)j;
                if ((mask & last_w->mask) >> j & 1 &&
                    writes_other_value(value ? value + (byte - a) : NULL, (const uint8_t *)(uintptr_t)byte))
                    return global_race(last_w, a, (int64_t)(a - L->ranges[2 * k]), at, access); /* its first byte */
            }
        }
        if (writes && last_r && !(atomic && global_atomic(last_r->access)) && !global_ordered(last_r, b, t, epoch, gen))
            return global_race(last_r, first, offset, at, access);
        global_record_t now = {(uint32_t)(b + 1), (uint32_t)t, epoch, gen, global_grid_epoch,
                               release_count[b], at, mask, (uint8_t)access, {0, 0}};
        if (writes) {
            sh->w = now;
            if (last_r && last_r->block == now.block && last_r->thread == now.thread) sh->r.block = 0;
        } else {
            sh->r = now;
        }
    }
    return 0;
}
