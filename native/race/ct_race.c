/* libctrace: one collective's algorithms raced call by call inside one run (issues 77, 93).
 *
 * Preloaded alone (LD_PRELOAD) into every rank of an unchanged program, in C or Fortran
 * (mpif.h and `use mpi`: gfortran's mpi_<name>_ entry points, forwarded to the library's own
 * pmpi_<name>_). Every intra-communicator of two ranks or more whose members are all in
 * MPI_COMM_WORLD is raced, sub-communicators included; inter-communicators are left alone.
 * A communicator is known by an attribute cached on it (MPI_Comm_create_keyval, with a delete
 * callback), never by its handle's value: a handle freed and reused by a new communicator is a
 * new communicator, and freeing one frees its duplicates. Nothing caps how many.
 *
 * Each call of the raced collective on a communicator is assigned a candidate algorithm in
 * randomized complete blocks, within that communicator's own sequence of calls (which every
 * member makes in the same order): the calls of one message size form a stratum (the size from
 * the arguments every rank gives alike: an in-place allgather's receive side), and every block
 * of K units of a stratum holds each of the K candidates once, in an order drawn from
 * COMMTUNE_RACE_SEED, the communicator's identity (agreed by its members at its first raced
 * call), the stratum and the block's number alone, so every member draws the same one. The
 * first candidate is the reference: the library's own decision.
 *
 * A unit of the blocks is a run of COMMTUNE_RACE_RUN consecutive calls of a stratum (R), all
 * made by one candidate. With COMMTUNE_RACE_DRAIN=1 each unit starts with a barrier on the
 * call's communicator: every rank has ended every earlier call, so what the last unit sent
 * has arrived. A unit's length doubles every GROW_BLOCKS blocks of its stratum, from R up to
 * COMMTUNE_RACE_RUN_MAX (the same on every rank: a function of the block's number).
 *
 * What a unit costs the program ("time"): each of its calls from the last member's arrival to
 * the last member's departure, summed. Each member times its calls from its own exit from the
 * unit's barrier (no clock is shared), and at the unit's end one allreduce gives every member
 * the largest arrival and departure of each call. A member that leaves a call while its data
 * is still on the way to another (an allreduce made of a reduce and a broadcast) is not the
 * last to depart, and a member that arrives late (the program's imbalance) is waited for by
 * every algorithm alike. Beside it: the least and the most any member spent inside the calls
 * ("time_last", "time_calls") and the slowest member's time from the barrier to its last
 * call's end, the computation between the calls included ("time_span").
 *
 * How a candidate is applied (COMMTUNE_RACE_MODE):
 *   call  MPICH: the MPI_T control variable is written before every call (MPICH reads
 *         MPIR_CVAR_<COLL>_INTRA_ALGORITHM at every call; the launch sets
 *         MPIR_CVAR_DEVICE_COLLECTIVES=none so that it governs the whole call);
 *   dup   Open MPI: coll/tuned copies coll_tuned_<coll>_algorithm when a communicator is made,
 *         so at the first raced call on a communicator the variable is written and the
 *         communicator duplicated once per candidate (then written back), and each call goes
 *         to its candidate's duplicate. It needs coll_tuned_use_dynamic_rules=1 at launch:
 *         without it the write does nothing, and the race is refused.
 * A candidate whose restrictions a call does not meet never runs it: the reference runs
 * instead and the unit is marked (its candidate's number + 128), never evidence. Restrictions
 * are the library's stated ones (COMMTUNE_RACE_RULES) and what it answers: each candidate's
 * first call at each size on each communicator is made with MPI_ERRORS_RETURN on the
 * communicator (MPICH also with MPIR_CVAR_COLLECTIVE_FALLBACK=error, since its algorithms fall
 * back silently); a call refused there is made again as the reference, and the candidate's
 * later calls of that size there run the reference.
 *
 * Each rank hashes its sequence of assignments per communicator. At MPI_Finalize every rank's
 * units go to rank 0, which combines each communicator's units over its members and checks
 * that all of them made the same assignments (same hash, same units, every member heard):
 * where not, the race is discarded ("error") and nothing of it is evidence. Rank 0 writes
 * COMMTUNE_RACE_OUT (JSON). A stratum's last unit, where the run ended inside it, is left out.
 * A setup that cannot race (no such variable, a value out of range, dynamic rules off, a
 * program that runs MPI_THREAD_MULTIPLE) is written there as "refused" with the reason, and
 * the program runs untouched.
 *
 *   COMMTUNE_RACE_OP      allreduce | bcast | reduce | allgather | alltoall
 *   COMMTUNE_RACE_CVAR    the MPI_T name of the variable choosing its algorithm
 *   COMMTUNE_RACE_VALUES  the candidates' integer codes, comma-separated, the reference first
 *   COMMTUNE_RACE_MODE    call | dup
 *   COMMTUNE_RACE_SEED    the blocks' seed (an unsigned integer)
 *   COMMTUNE_RACE_OUT     the JSON file rank 0 writes
 *   COMMTUNE_RACE_RULES   per candidate, comma-separated, what a call must meet for it to run:
 *                         "-" nothing, else "+"-joined words: sizeN (a communicator of N
 *                         ranks), pow2 (of a power of two), commute (a commutative operation)
 *   COMMTUNE_RACE_SHARE   0: two labels of one value get a duplicate each (dup mode; default
 *                         1: they share one, so an A/A race compares one communicator)
 *   COMMTUNE_RACE_RUN     the calls of a unit (default 1)
 *   COMMTUNE_RACE_RUN_MAX the calls of a unit at most, as it grows (default: no growth)
 *   COMMTUNE_RACE_CVAR2   dup mode: a second variable the communicator copies with the first
 *                         (Open MPI's coll_tuned_<coll>_algorithm_segmentsize), and
 *   COMMTUNE_RACE_VALUES2 its value for each candidate (-1: left as launched), so that a
 *                         candidate is an algorithm with its segment size
 *   COMMTUNE_RACE_DRAIN   1: a barrier before each unit (default 0)
 *   COMMTUNE_RACE_WATCH   a path: each rank maps PATH.<world rank>, two ints, and keeps in
 *                         them the candidate of the raced call under way and of the last one
 *                         that ended (+1; 0: none; the reference that ran for a refused
 *                         candidate: its number + 128 + 1). The pages outlive the process: a
 *                         run that crashed or was killed while hung says which candidate it
 *                         was in, or ran last, where the JSON is never written.
 *   COMMTUNE_RACE_SKEW    a world rank whose recorded assignments are altered (not what it
 *                         runs): the tests' way to see a disagreement detected and discarded
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../include/ct_mpit_text.h"

#define MAX_CANDIDATES 16
#define MAX_UNITS (1L << 16) /* a communicator's units raced at most; its later calls run as is */
#define MAX_SLOTS 64         /* message sizes raced apart on a communicator; more share the last */
#define GROW_BLOCKS 24       /* a stratum's blocks between two doublings of its units' length */
#define FELL_BACK 128        /* added to a unit's candidate: the reference ran */
#define MAX_RUN 1024         /* a unit's calls at most (COMMTUNE_RACE_RUN_MAX beyond: refused) */

enum { MODE_CALL, MODE_DUP };
enum { OP_NONE, OP_ALLREDUCE, OP_BCAST, OP_REDUCE, OP_ALLGATHER, OP_ALLTOALL };
static const char *const OP_NAMES[] = {"", "allreduce", "bcast", "reduce", "allgather", "alltoall"};
static int raced_op; /* the wrappers compare this, not a string, on every call */
/* inside a Fortran call raced here: MPICH's pmpi_*_ call the C bindings, which pass it on */
static int in_fortran;

static int active;
static int set_up, finalized;
static int mode;
static char op_name[32];
static char cvar_name[256];
static char out_path[4096];
static char refused[512];
static int values[MAX_CANDIDATES];
static int k;
static uint64_t seed;
static int world_size, world_rank;
static MPI_T_cvar_handle handle;
static int have_handle;
static int mpit_up;
static int original;
static MPI_T_cvar_handle handle2; /* COMMTUNE_RACE_CVAR2, where given */
static int have_handle2, original2;
static int values2[MAX_CANDIDATES];
static int share = 1; /* COMMTUNE_RACE_SHARE=0: every label its own duplicate */
static int skew = -1; /* COMMTUNE_RACE_SKEW */

/* COMMTUNE_RACE_RULES: per candidate the communicator size it needs (0: any), a power of two,
 * a commutative operation */
static struct { int size, pow2, commute; } rules[MAX_CANDIDATES];

static int run = 1;         /* the calls of a unit, at first */
static int run_max;         /* and at most, as it doubles */
static int drain;           /* a barrier before each unit: what the last one sent has arrived */
static volatile int *watch; /* COMMTUNE_RACE_WATCH's page: [0] the call under way, [1] the last */

/* one message size on one communicator: its blocks as they go */
typedef struct {
    long bytes;
    long made;     /* its units begun */
    long left;     /* the calls its current unit still takes */
    long unit;     /* the unit its calls go to */
    double began;  /* when its current unit began (after its barrier) */
    double *times; /* its current unit's calls: when each began and ended, after ``began`` */
    int order[MAX_CANDIDATES];
    unsigned char probed[MAX_CANDIDATES];    /* its first call made under check */
    unsigned char fell_back[MAX_CANDIDATES]; /* the library refused it at this size */
} slot_t;

/* a communicator raced, from its first raced call to its end (and kept to MPI_Finalize) */
typedef struct {
    long id;    /* agreed by its members at its first raced call */
    int leader; /* the world rank of its rank 0: with id, what names it on every member */
    int size;
    int index; /* its place in ``tracked`` */
    int live;
    MPI_Comm comm;                 /* the program's (while live) */
    MPI_Comm dups[MAX_CANDIDATES]; /* dup mode: one per candidate (shared by equal values) */
    long calls;                    /* raced calls made on it */
    long units;                    /* its units begun */
    uint64_t hash;                 /* of its assignments, in order */
    int nslots;
    slot_t slots[MAX_SLOTS];
} tracked_t;

static tracked_t **tracked; /* every communicator raced, in the order first raced */
static int ntracked, tracked_cap;
static long next_id; /* the next communicator's id, at least (agreed: the members' largest) */
static int keyval = MPI_KEYVAL_INVALID;
static char not_raced; /* the attribute's value on a communicator left alone */

/* the units, in the order begun on this rank */
typedef struct {
    int comm;  /* its communicator's place in ``tracked`` */
    int slot;  /* its stratum on that communicator */
    int cand;  /* its candidate (+ FELL_BACK: the reference ran) */
    int calls; /* its calls (its block's length) */
    double in_calls;
    double span; /* from its barrier to its last call's end */
    double cost; /* its calls from the last rank's arrival to the last rank's departure */
} unit_t;

static unit_t *units;
static long nunits, units_cap;
static double barrier_time; /* this rank's time in the units' barriers */
static double started;      /* MPI_Wtime at MPI_Init's end */
static tracked_t *cur;      /* the communicator, stratum and unit of the call under way */
static int cur_slot;
static long cur_unit;

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t mix(uint64_t h, uint64_t v) {
    uint64_t s = h ^ (v * 0x9E3779B97F4A7C15ULL);
    return splitmix(&s);
}

/* The order of block ``block`` of stratum ``s`` of ``t``: a Fisher-Yates shuffle drawn from
 * the seed, the communicator's identity, the stratum and the block. */
static void draw_order(tracked_t *t, int s, long block) {
    int *order = t->slots[s].order;
    uint64_t state = seed ^ ((uint64_t)block * 0xD1B54A32D192ED03ULL) ^
                     ((uint64_t)(s + 1) * 0x8CB92BA72F3D8DD7ULL);
    state = mix(mix(state, (uint64_t)t->id), (uint64_t)t->leader + 1);
    for (int i = 0; i < k; ++i)
        order[i] = i;
    for (int i = k - 1; i > 0; --i) {
        int j = (int)(splitmix(&state) % (uint64_t)(i + 1));
        int x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
}

/* The stratum of a call of ``bytes`` bytes on ``t`` (every member sees its sizes in the same
 * order). */
static int slot_of(tracked_t *t, long bytes) {
    for (int i = 0; i < t->nslots; ++i)
        if (t->slots[i].bytes == bytes) return i;
    if (t->nslots == MAX_SLOTS) return MAX_SLOTS - 1;
    t->slots[t->nslots].bytes = bytes;
    return t->nslots++;
}

static void refuse(const char *why) {
    snprintf(refused, sizeof refused, "%s", why);
    active = 0;
}

/* MPICH's MPIR_CVAR_COLLECTIVE_FALLBACK: its handle, its value at launch and "error"'s */
static MPI_T_cvar_handle fallback;
static int have_fallback, fallback_original, fallback_error;

static void find_fallback(void) {
    int index, count;
    if (MPI_T_cvar_get_index("MPIR_CVAR_COLLECTIVE_FALLBACK", &index) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(index, NULL, &fallback, &count) != MPI_SUCCESS)
        return;
    if (MPI_T_cvar_read(fallback, &fallback_original) != MPI_SUCCESS) {
        MPI_T_cvar_handle_free(&fallback);
        return;
    }
    fallback_error = 0; /* MPICH lists error, print, silent */
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    char name[256], desc[1024];
    int nlen = sizeof name, dlen = sizeof desc, verbosity, bind, scope, items;
    MPI_Datatype type;
    if (MPI_T_cvar_get_info(index, name, &nlen, &verbosity, &type, &enumtype, desc, &dlen, &bind,
                            &scope) == MPI_SUCCESS &&
        enumtype != MPI_T_ENUM_NULL &&
        MPI_T_enum_get_info(enumtype, &items, name, &nlen) == MPI_SUCCESS) {
        for (int i = 0; i < items; ++i) {
            int value, len = sizeof name;
            if (MPI_T_enum_get_item(enumtype, i, &value, name, &len) == MPI_SUCCESS &&
                strcmp(name, "error") == 0)
                fallback_error = value;
        }
    }
    have_fallback = 1;
}

static int current; /* what the variable holds now: a write only where it changes */

static int write_value(int value) {
    int ok = MPI_T_cvar_write(handle, &value) == MPI_SUCCESS;
    if (ok) current = value;
    return ok;
}

static void set_value(int value) {
    if (value != current) write_value(value);
}

/* The integers of a comma-separated list into ``out`` (at most MAX_CANDIDATES): how many. */
static int parse_values(const char *text, int *out) {
    char *copy = strdup(text ? text : "");
    int n = 0;
    for (char *tok = strtok(copy, ","); tok && n < MAX_CANDIDATES; tok = strtok(NULL, ","))
        out[n++] = atoi(tok);
    free(copy);
    return n;
}

/* COMMTUNE_RACE_RULES into ``rules``; the reason it cannot be read, or NULL. */
static const char *parse_rules(const char *text) {
    memset(rules, 0, sizeof rules);
    if (!text || !text[0]) return NULL;
    char *copy = strdup(text), *save = NULL;
    int n = 0;
    const char *why = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), ++n) {
        if (n >= k) {
            why = "COMMTUNE_RACE_RULES gives more entries than candidates";
            break;
        }
        char *inner = NULL;
        for (char *w = strtok_r(tok, "+", &inner); w; w = strtok_r(NULL, "+", &inner)) {
            if (strcmp(w, "-") == 0) continue;
            if (strncmp(w, "size", 4) == 0 && atoi(w + 4) > 0)
                rules[n].size = atoi(w + 4);
            else if (strcmp(w, "pow2") == 0)
                rules[n].pow2 = 1;
            else if (strcmp(w, "commute") == 0)
                rules[n].commute = 1;
            else
                why = "COMMTUNE_RACE_RULES has a word it does not know";
        }
    }
    free(copy);
    return why;
}

/* Whether a call on a communicator of ``size`` ranks with operation ``op`` (MPI_OP_NULL: none)
 * meets candidate ``c``'s stated restrictions (the same on every rank: the arguments are). */
static int meets(int c, int size, MPI_Op op) {
    if (rules[c].size && size != rules[c].size) return 0;
    if (rules[c].pow2 && (size & (size - 1)) != 0) return 0;
    if (rules[c].commute && op != MPI_OP_NULL) {
        int commutes = 1;
        PMPI_Op_commutative(op, &commutes);
        if (!commutes) return 0;
    }
    return 1;
}

static int write_second(int value) { return MPI_T_cvar_write(handle2, &value) == MPI_SUCCESS; }

/* COMMTUNE_RACE_CVAR2 bound and every candidate's value of it written and read back; the
 * reason it cannot be, or NULL. */
static const char *second_variable(const char *name, const char *vals) {
    for (int i = 0; i < MAX_CANDIDATES; ++i)
        values2[i] = -1;
    if (!name || !name[0]) return NULL;
    if (mode != MODE_DUP) return "a second variable races only where a communicator copies it";
    if (parse_values(vals, values2) != k)
        return "COMMTUNE_RACE_VALUES2 does not give one value per candidate";
    int index, count;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS)
        return "the library has no such second control variable";
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle2, &count) != MPI_SUCCESS ||
        MPI_T_cvar_read(handle2, &original2) != MPI_SUCCESS)
        return "the second control variable could not be bound";
    have_handle2 = 1;
    for (int i = 0; i < k; ++i) {
        int back;
        if (values2[i] < 0) continue;
        if (!write_second(values2[i]) || MPI_T_cvar_read(handle2, &back) != MPI_SUCCESS ||
            back != values2[i]) {
            write_second(original2);
            return "the library refused a value of the second control variable";
        }
    }
    write_second(original2);
    return NULL;
}

/* This rank's page of COMMTUNE_RACE_WATCH, mapped shared (its stores reach the file whatever
 * ends the process); none where the variable is unset or the file cannot be made. */
static void map_watch(void) {
    const char *path = getenv("COMMTUNE_RACE_WATCH");
    if (!path || !path[0]) return;
    char name[4200];
    snprintf(name, sizeof name, "%s.%d", path, world_rank);
    int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return;
    if (ftruncate(fd, 2 * sizeof(int)) == 0) {
        void *page = mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page != MAP_FAILED) watch = page;
    }
    close(fd);
}

/* Whether a race is asked for: the variables it cannot do without are all set. */
static int asked(void) {
    return getenv("COMMTUNE_RACE_OP") && getenv("COMMTUNE_RACE_CVAR") &&
           getenv("COMMTUNE_RACE_VALUES") && getenv("COMMTUNE_RACE_OUT");
}

/* Whether duplicate ``i`` of a communicator is another's (two labels of one value share one
 * where COMMTUNE_RACE_SHARE is 1): that one's index, else ``i``. */
static int shared_with(int i) {
    for (int j = 0; j < i && share; ++j)
        if (values[j] == values[i] && values2[j] == values2[i]) return j;
    return i;
}

/* A raced communicator's end (its attribute deleted: MPI_Comm_free, or MPI_Finalize): its
 * duplicates freed, its units kept for MPI_Finalize. */
static int forget(MPI_Comm comm, int key, void *value, void *extra) {
    (void)comm;
    (void)key;
    (void)extra;
    tracked_t *t = value;
    if (value == &not_raced || t == NULL || !t->live) return MPI_SUCCESS;
    t->live = 0;
    if (mode == MODE_DUP)
        for (int c = 0; c < k; ++c)
            if (shared_with(c) == c && t->dups[c] != MPI_COMM_NULL) PMPI_Comm_free(&t->dups[c]);
    return MPI_SUCCESS;
}

static void setup(void) {
    if (set_up || !asked()) return;
    set_up = 1;
    const char *op = getenv("COMMTUNE_RACE_OP");
    const char *cvar = getenv("COMMTUNE_RACE_CVAR");
    const char *vals = getenv("COMMTUNE_RACE_VALUES");
    const char *how = getenv("COMMTUNE_RACE_MODE");
    const char *s = getenv("COMMTUNE_RACE_SEED");
    const char *out = getenv("COMMTUNE_RACE_OUT");
    snprintf(op_name, sizeof op_name, "%s", op);
    for (int i = OP_ALLREDUCE; i <= OP_ALLTOALL; ++i)
        if (strcmp(op, OP_NAMES[i]) == 0) raced_op = i;
    snprintf(cvar_name, sizeof cvar_name, "%s", cvar);
    snprintf(out_path, sizeof out_path, "%s", out);
    seed = s ? strtoull(s, NULL, 10) : 0;
    mode = how && strcmp(how, "dup") == 0 ? MODE_DUP : MODE_CALL;
    const char *shared = getenv("COMMTUNE_RACE_SHARE");
    share = shared ? atoi(shared) : 1;
    const char *r = getenv("COMMTUNE_RACE_RUN");
    run = r ? atoi(r) : 1;
    const char *rm = getenv("COMMTUNE_RACE_RUN_MAX");
    run_max = rm ? atoi(rm) : run;
    if (run_max < run) run_max = run;
    const char *d = getenv("COMMTUNE_RACE_DRAIN");
    drain = d ? atoi(d) : 0;
    const char *sk = getenv("COMMTUNE_RACE_SKEW");
    skew = sk && sk[0] ? atoi(sk) : -1;
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    active = 1;
    map_watch();
    if (run < 1) return refuse("COMMTUNE_RACE_RUN below 1");
    if (run_max > MAX_RUN) return refuse("COMMTUNE_RACE_RUN_MAX above 1024");
    k = parse_values(vals, values);
    if (k < 2) return refuse("fewer than two candidates");
    const char *bad = parse_rules(getenv("COMMTUNE_RACE_RULES"));
    if (bad) return refuse(bad);
    int provided;
    if (!mpit_up && MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return refuse("MPI_T could not be initialised");
    mpit_up = 1;
    int index, count;
    if (MPI_T_cvar_get_index(cvar_name, &index) != MPI_SUCCESS)
        return refuse("the library has no such control variable");
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
        return refuse("the control variable could not be bound");
    have_handle = 1;
    if (MPI_T_cvar_read(handle, &original) != MPI_SUCCESS)
        return refuse("the control variable could not be read");
    current = original;
    if (mode == MODE_DUP) { /* without dynamic rules coll/tuned ignores the variable */
        int dyn_index, dyn = 0, n;
        MPI_T_cvar_handle dyn_handle;
        if (MPI_T_cvar_get_index("coll_tuned_use_dynamic_rules", &dyn_index) != MPI_SUCCESS ||
            MPI_T_cvar_handle_alloc(dyn_index, NULL, &dyn_handle, &n) != MPI_SUCCESS)
            return refuse("coll/tuned has no dynamic rules here: a write would do nothing");
        MPI_T_cvar_read(dyn_handle, &dyn);
        MPI_T_cvar_handle_free(&dyn_handle);
        if (!dyn)
            return refuse("coll_tuned_use_dynamic_rules is 0 at launch: a write would do nothing");
    }
    for (int i = 0; i < k; ++i) { /* every candidate can be written, then the original back */
        int back;
        if (!write_value(values[i]) || MPI_T_cvar_read(handle, &back) != MPI_SUCCESS ||
            back != values[i]) {
            write_value(original);
            char why[128];
            snprintf(why, sizeof why, "the library refused the value %d", values[i]);
            return refuse(why);
        }
    }
    write_value(original);
    const char *why =
        second_variable(getenv("COMMTUNE_RACE_CVAR2"), getenv("COMMTUNE_RACE_VALUES2"));
    if (why) return refuse(why);
    if (mode == MODE_CALL) find_fallback();
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, forget, &keyval, NULL) != MPI_SUCCESS)
        return refuse("a communicator attribute could not be made");
}

/* The calls of a unit in block ``block`` of a stratum: ``run``, doubled every GROW_BLOCKS
 * blocks while within ``run_max`` (the same on every rank: a function of the block alone). */
static long unit_length(long block) {
    long len = run;
    for (long g = block / GROW_BLOCKS; g > 0 && len * 2 <= run_max; --g)
        len *= 2;
    return len;
}

/* A new unit of stratum ``s`` of ``t`` for candidate ``c`` of ``len`` calls: its number. */
static long new_unit(tracked_t *t, int s, int c, long len) {
    if (nunits == units_cap) {
        units_cap = units_cap ? 2 * units_cap : 4096;
        units = realloc(units, sizeof(unit_t) * (size_t)units_cap);
    }
    unit_t *u = &units[nunits];
    u->comm = t->index;
    u->slot = s;
    u->cand = c;
    u->calls = (int)len;
    u->in_calls = 0.0;
    u->span = 0.0;
    u->cost = 0.0;
    t->slots[s].left = len;
    t->slots[s].unit = nunits;
    t->units++;
    t->hash = mix(mix(mix(t->hash, (uint64_t)t->slots[s].bytes), (uint64_t)c), (uint64_t)len);
    if (world_rank == skew) t->hash = mix(t->hash, 1);
    return nunits++;
}

/* The communicator raced as ``comm`` (made at its first raced call: collective, every member
 * is at this same call), or NULL where it is left alone. */
static tracked_t *tracked_of(MPI_Comm comm) {
    void *value = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, keyval, &value, &found);
    if (found) return value == &not_raced ? NULL : value;
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &size);
    MPI_Group group, world, both;
    int leader = MPI_UNDEFINED, zero = 0, common = 0;
    if (!inter && size >= 2) { /* its members all in the world: its rank 0's world rank */
        PMPI_Comm_group(comm, &group);
        PMPI_Comm_group(MPI_COMM_WORLD, &world);
        PMPI_Group_intersection(group, world, &both);
        PMPI_Group_size(both, &common);
        PMPI_Group_translate_ranks(group, 1, &zero, world, &leader);
        PMPI_Group_free(&both);
        PMPI_Group_free(&world);
        PMPI_Group_free(&group);
    }
    if (inter || size < 2 || common != size || leader == MPI_UNDEFINED) {
        PMPI_Comm_set_attr(comm, keyval, &not_raced);
        return NULL;
    }
    tracked_t *t = calloc(1, sizeof *t);
    if (mode == MODE_CALL) set_value(original); /* the agreement runs the library's own */
    long agreed = next_id;
    PMPI_Allreduce(&next_id, &agreed, 1, MPI_LONG, MPI_MAX, comm);
    next_id = agreed + 1;
    t->id = agreed;
    t->leader = leader;
    t->size = size;
    t->live = 1;
    t->comm = comm;
    t->hash = 0x243F6A8885A308D3ULL;
    for (int c = 0; c < k; ++c)
        t->dups[c] = MPI_COMM_NULL;
    if (mode == MODE_DUP) {
        for (int c = 0; c < k; ++c) {
            int same = shared_with(c);
            if (same != c) {
                t->dups[c] = t->dups[same];
                continue;
            }
            write_value(values[c]);
            if (have_handle2) write_second(values2[c] < 0 ? original2 : values2[c]);
            PMPI_Comm_dup(comm, &t->dups[c]);
        }
        write_value(original);
        if (have_handle2) write_second(original2);
    }
    if (ntracked == tracked_cap) {
        tracked_cap = tracked_cap ? 2 * tracked_cap : 64;
        tracked = realloc(tracked, sizeof *tracked * (size_t)tracked_cap);
    }
    t->index = ntracked;
    tracked[ntracked++] = t;
    PMPI_Comm_set_attr(comm, keyval, t);
    return t;
}

/* Where a call of candidate ``c`` on ``comm`` goes (Open MPI: its duplicate; MPICH: the
 * variable written). */
static MPI_Comm route(tracked_t *t, MPI_Comm comm, int c) {
    if (mode == MODE_CALL) {
        set_value(values[c]);
        return comm;
    }
    return t->dups[c];
}

/* The candidate of the next raced call on ``comm`` of ``bytes`` bytes with operation ``op``
 * (MPI_OP_NULL: none) and where it goes; -1: not raced. A unit's calls all go to its
 * candidate; a call its candidate's restrictions exclude runs the reference, the unit marked. */
static int begin(MPI_Comm comm, long bytes, MPI_Op op, MPI_Comm *use) {
    *use = comm;
    if (!active || comm == MPI_COMM_NULL) return -1;
    tracked_t *t = tracked_of(comm);
    if (t == NULL || t->units >= MAX_UNITS) {
        if (mode == MODE_CALL) set_value(original); /* an unraced call: the library's own */
        return -1;
    }
    int s = slot_of(t, bytes);
    slot_t *slot = &t->slots[s];
    if (slot->left == 0) { /* a new unit: the next candidate of the block */
        long u = slot->made++;
        if (drain) { /* every rank has ended every earlier call */
            double b = MPI_Wtime();
            PMPI_Barrier(comm);
            barrier_time += MPI_Wtime() - b;
        }
        if (u % k == 0) draw_order(t, s, u / k);
        long len = unit_length(u / k);
        if (!slot->times) slot->times = malloc(sizeof(double) * 2 * (size_t)run_max);
        new_unit(t, s, slot->order[u % k], len);
        slot->began = MPI_Wtime();
    }
    t->calls++;
    slot->left--;
    cur = t;
    cur_slot = s;
    cur_unit = slot->unit;
    int c = units[cur_unit].cand % FELL_BACK;
    if (slot->fell_back[c] || !meets(c, t->size, op)) { /* the reference runs, marked */
        *use = route(t, comm, 0);
        units[cur_unit].cand = c + FELL_BACK;
        return c + FELL_BACK;
    }
    *use = route(t, comm, c);
    return c;
}

/* Whether the call of candidate ``c`` (at the stratum just assigned) is its first at this size
 * on this communicator and is to be made under check: not the reference; MPICH where its
 * fallback variable was found (its algorithms fall back silently else), Open MPI always. */
static int probing(int c) {
    if (c <= 0 || c >= FELL_BACK || (mode == MODE_CALL && !have_fallback)) return 0;
    if (cur->slots[cur_slot].probed[c]) return 0;
    cur->slots[cur_slot].probed[c] = 1;
    return 1;
}

/* The first call of a candidate at a size, made with errors returned on the communicator it
 * goes to (MPICH: and fallback as an error); refused: marked, and the call made again as the
 * reference (every rank checks the same restrictions on the same arguments, so every rank
 * takes the same branch). */
#define PROBED(CALL, C)                                                                            \
    {                                                                                              \
        MPI_Errhandler was;                                                                        \
        PMPI_Comm_get_errhandler(comm, &was);                                                      \
        PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);                                         \
        if (have_fallback) MPI_T_cvar_write(fallback, &fallback_error);                            \
        rc = CALL;                                                                                 \
        if (have_fallback) MPI_T_cvar_write(fallback, &fallback_original);                         \
        PMPI_Comm_set_errhandler(comm, was);                                                       \
        PMPI_Errhandler_free(&was);                                                                \
        if (rc != MPI_SUCCESS) {                                                                   \
            cur->slots[cur_slot].fell_back[C] = 1;                                                 \
            C += FELL_BACK;                                                                        \
            units[cur_unit].cand = C;                                                              \
            comm = route(cur, comm, 0);                                                            \
            t0 = MPI_Wtime();                                                                      \
            rc = CALL;                                                                             \
        }                                                                                          \
    }

/* What a unit's calls cost the program, once its last call has ended on every member: each
 * call from the last member's arrival to the last member's departure, summed. Each member's
 * times are taken from its own exit from the unit's barrier, so no clock is shared; one
 * allreduce of the largest arrival and departure of each call (on the reference's duplicate,
 * or, MPICH, the program's communicator under the library's own decision). A member that
 * leaves a call while its data is still on the way to another is not the last to depart; a
 * member that arrives late is waited for by every algorithm alike. */
static void settle(tracked_t *t, slot_t *slot, unit_t *u) {
    int n = 2 * u->calls;
    double most[2 * MAX_RUN];
    MPI_Comm on = t->comm;
    if (mode == MODE_DUP)
        on = t->dups[0];
    else
        set_value(original);
    double b = MPI_Wtime();
    PMPI_Allreduce(slot->times, most, n, MPI_DOUBLE, MPI_MAX, on);
    barrier_time += MPI_Wtime() - b;
    for (int i = 0; i < u->calls; ++i)
        u->cost += most[2 * i + 1] - most[2 * i];
}

static void end(int c, double t0) {
    if (c < 0) return;
    double now = MPI_Wtime();
    unit_t *u = &units[cur_unit];
    slot_t *slot = &cur->slots[cur_slot];
    u->in_calls += now - t0;
    u->span = now - slot->began;
    int i = u->calls - (int)slot->left - 1; /* the call's place in its unit */
    slot->times[2 * i] = t0 - slot->began;
    slot->times[2 * i + 1] = now - slot->began;
    if (slot->left == 0) settle(cur, slot, u);
    if (watch) {
        watch[0] = 0;
        watch[1] = c + 1;
    }
}

/* The size in bytes of ``count`` elements of ``type`` (0 where the type has none). */
static long bytes_of(int count, MPI_Datatype type) {
    int size = 0;
    if (type != MPI_DATATYPE_NULL) PMPI_Type_size(type, &size);
    return (long)count * size;
}

/* One raced call: ``COMM`` the communicator variable that ``CALL`` (an expression giving the
 * call's return code) reads, ``BYTES`` its stratum's size, ``OPER`` its operation. */
#define RACED(COMM, BYTES, OPER, CALL, RC)                                                         \
    {                                                                                              \
        MPI_Comm comm = COMM, use;                                                                 \
        int c = begin(comm, BYTES, OPER, &use);                                                    \
        double t0 = MPI_Wtime();                                                                   \
        comm = use;                                                                                \
        if (watch && c >= 0) watch[0] = c + 1;                                                     \
        int rc;                                                                                    \
        if (probing(c))                                                                            \
            PROBED(CALL, c)                                                                        \
        else                                                                                       \
            rc = CALL;                                                                             \
        end(c, t0);                                                                                \
        RC = rc;                                                                                   \
    }

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm_) {
    if (raced_op != OP_ALLREDUCE || in_fortran)
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm_);
    int out;
    RACED(comm_, bytes_of(count, datatype), op,
          PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm), out)
    return out;
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm_) {
    if (raced_op != OP_BCAST || in_fortran) return PMPI_Bcast(buffer, count, datatype, root, comm_);
    int out;
    RACED(comm_, bytes_of(count, datatype), MPI_OP_NULL,
          PMPI_Bcast(buffer, count, datatype, root, comm), out)
    return out;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm_) {
    if (raced_op != OP_REDUCE || in_fortran)
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm_);
    int out;
    RACED(comm_, bytes_of(count, datatype), op,
          PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm), out)
    return out;
}

/* allgather and alltoall: the stratum from the receive side, which every rank gives alike (an
 * in-place call's send count and type are ignored and may differ, or be MPI_DATATYPE_NULL) */
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm_) {
    if (raced_op != OP_ALLGATHER || in_fortran)
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm_);
    int out;
    RACED(comm_, bytes_of(recvcount, recvtype), MPI_OP_NULL,
          PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm), out)
    return out;
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm_) {
    if (raced_op != OP_ALLTOALL || in_fortran)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm_);
    int out;
    RACED(comm_, bytes_of(recvcount, recvtype), MPI_OP_NULL,
          PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm), out)
    return out;
}

/* MPI_T made ready before MPI_Init where a race is asked for: Open MPI 4.1 then opens its
 * components once for both (after MPI_Init, MPI_T_init_thread took 0.21 s of a 0.53 s run of
 * 2 ranks here; before it, the two together 0.24 s). The standard allows either order. */
static void early_mpit(void) {
    int provided;
    if (asked() && !mpit_up)
        mpit_up = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
}

static void initialised(int provided) {
    setup();
    if (provided == MPI_THREAD_MULTIPLE && active)
        refuse("the program runs MPI_THREAD_MULTIPLE (MPI calls from several threads at "
               "once): the race's assignment is one sequence per communicator, so nothing is "
               "raced");
    started = MPI_Wtime();
}

int MPI_Init(int *argc, char ***argv) {
    early_mpit();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) initialised(MPI_THREAD_SINGLE);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    early_mpit();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) initialised(*provided);
    return rc;
}

static void write_times(FILE *out, const char *key, const double *times_of, long n) {
    fprintf(out, ", \"%s\": [", key);
    for (long i = 0; i < n; ++i)
        fprintf(out, "%s%.9g", i ? "," : "", times_of[i]);
    fputs("]", out);
}

static void write_ints(FILE *out, const char *key, const int *ints, long n) {
    fprintf(out, ", \"%s\": [", key);
    for (long i = 0; i < n; ++i)
        fprintf(out, "%s%d", i ? "," : "", ints[i]);
    fputs("]", out);
}

/* What a rank sends rank 0 of each of its communicators and each of its units */
typedef struct {
    long id;
    int leader, size, units, rank;
    long calls;
    uint64_t hash;
} comm_rec;

typedef struct {
    long id, bytes, order;
    int leader, rank, cand, calls;
    double in_calls, span, cost;
} unit_rec;

/* rank 0's combined race: per unit its communicator (a group of ``comm_ranks``), stratum (a
 * communicator size and message size), candidate, calls and three times */
static struct {
    long n;
    int *comm, *slot, *cand, *calls;
    double *time, *least, *most, *span;
    int ncomms, *comm_ranks;
    long raced;
    int nslots;
    long slot_bytes[4096];
    int slot_ranks[4096];
} merged;

/* What racing itself cost: the least and the most any rank spent in the units' barriers, and
 * the run's time (the slowest rank's), from MPI_Init's end to MPI_Finalize's start. */
static double cost[3];

static void write_race(const char *error) {
    FILE *out = fopen(out_path, "w");
    if (!out) return;
    long n = error ? 0 : merged.n;
    fputs("{\"op\": ", out);
    ct_json_string(out, op_name);
    fputs(", \"cvar\": ", out);
    ct_json_string(out, cvar_name);
    fprintf(out, ", \"mode\": \"%s\", \"seed\": %llu, \"ranks\": %d, \"values\": [",
            mode == MODE_DUP ? "dup" : "call", (unsigned long long)seed, world_size);
    for (int i = 0; i < k; ++i)
        fprintf(out, "%s%d", i ? ", " : "", values[i]);
    fputs("], \"values2\": [", out);
    for (int i = 0; i < k && have_handle2; ++i)
        fprintf(out, "%s%d", i ? ", " : "", values2[i]);
    fputs("], \"refused\": ", out);
    if (refused[0])
        ct_json_string(out, refused);
    else
        fputs("null", out);
    fputs(", \"error\": ", out);
    if (error)
        ct_json_string(out, error);
    else
        fputs("null", out);
    fprintf(out,
            ", \"statistic\": \"after_last_arrival\", \"run\": %d, \"run_max\": %d, \"drain\": %d",
            run, run_max, drain);
    fprintf(out, ", \"raced_calls\": %ld", error ? 0 : merged.raced);
    fprintf(out, ", \"barrier\": [%.9g, %.9g], \"span\": %.9g", cost[0], cost[1], cost[2]);
    fprintf(out, ", \"calls\": %ld", n);
    write_ints(out, "candidate", merged.cand, n);
    write_ints(out, "slot", merged.slot, n);
    write_ints(out, "comm", merged.comm, n);
    write_ints(out, "unit_calls", merged.calls, n);
    write_ints(out, "comm_ranks", merged.comm_ranks, error ? 0 : merged.ncomms);
    fputs(", \"slot_bytes\": [", out);
    for (int i = 0; i < merged.nslots && !error; ++i)
        fprintf(out, "%s%ld", i ? "," : "", merged.slot_bytes[i]);
    fputs("]", out);
    write_ints(out, "slot_ranks", merged.slot_ranks, error ? 0 : merged.nslots);
    fputs(", \"fell_back\": [", out);
    /* each (stratum, candidate) where a unit ran the reference instead, once, in order */
    unsigned char *seen = calloc((size_t)merged.nslots * MAX_CANDIDATES + 1, 1);
    for (long u = 0; u < n; ++u)
        if (merged.cand[u] >= FELL_BACK)
            seen[merged.slot[u] * MAX_CANDIDATES + merged.cand[u] - FELL_BACK] = 1;
    int first = 1;
    for (int s = 0; s < merged.nslots && !error; ++s)
        for (int c = 1; c < k; ++c) {
            if (!seen[s * MAX_CANDIDATES + c]) continue;
            fprintf(out, "%s[%d,%d]", first ? "" : ",", s, c);
            first = 0;
        }
    free(seen);
    fputs("]", out);
    write_times(out, "time", merged.time, n);
    write_times(out, "time_last", merged.least, n);
    write_times(out, "time_calls", merged.most, n);
    write_times(out, "time_span", merged.span, n);
    fputs("}\n", out);
    fclose(out);
}

static int by_comm(const void *a, const void *b) {
    const comm_rec *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    if (x->leader != y->leader) return x->leader < y->leader ? -1 : 1;
    return x->rank - y->rank;
}

static int by_unit(const void *a, const void *b) {
    const unit_rec *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    if (x->leader != y->leader) return x->leader < y->leader ? -1 : 1;
    if (x->rank != y->rank) return x->rank - y->rank;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The global stratum of a communicator size and a message size (rank 0's). */
static int merged_slot(int ranks, long bytes) {
    for (int i = 0; i < merged.nslots; ++i)
        if (merged.slot_ranks[i] == ranks && merged.slot_bytes[i] == bytes) return i;
    if (merged.nslots == 4096) return 4095;
    merged.slot_ranks[merged.nslots] = ranks;
    merged.slot_bytes[merged.nslots] = bytes;
    return merged.nslots++;
}

/* Every rank's records gathered at rank 0 (``size`` bytes each, ``n`` of this rank's): rank
 * 0's buffer of them all and their number (none elsewhere). */
static void *gathered(const void *mine, long n, int size, long *total) {
    int count = (int)(n * size), *counts = NULL, *at = NULL;
    if (world_rank == 0) {
        counts = malloc(sizeof(int) * (size_t)world_size);
        at = malloc(sizeof(int) * (size_t)world_size);
    }
    PMPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    long bytes = 0;
    if (world_rank == 0) {
        for (int r = 0; r < world_size; ++r) {
            at[r] = (int)bytes;
            bytes += counts[r];
        }
        all = malloc((size_t)bytes + 1);
    }
    PMPI_Gatherv(mine, count, MPI_BYTE, all, counts, at, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(counts);
    free(at);
    *total = bytes / size;
    return all;
}

/* Each communicator's units combined over its members at rank 0; the reason the members
 * disagree, or NULL. */
static const char *merge(void) {
    /* a stratum's last unit, where the run ended inside it, is not whole: left out */
    long whole = 0;
    for (long u = 0; u < nunits; ++u) {
        tracked_t *t = tracked[units[u].comm];
        slot_t *slot = &t->slots[units[u].slot];
        if (!(u == slot->unit && slot->left != 0)) ++whole;
    }
    comm_rec *cr = calloc((size_t)ntracked + 1, sizeof *cr);
    unit_rec *ur = calloc((size_t)whole + 1, sizeof *ur);
    for (int i = 0; i < ntracked; ++i) {
        tracked_t *t = tracked[i];
        cr[i] = (comm_rec){t->id, t->leader, t->size, 0, world_rank, t->calls, t->hash};
    }
    long w = 0;
    for (long u = 0; u < nunits; ++u) {
        tracked_t *t = tracked[units[u].comm];
        slot_t *slot = &t->slots[units[u].slot];
        if (u == slot->unit && slot->left != 0) continue;
        cr[units[u].comm].units++;
        int cand = units[u].cand;
        if (world_rank == skew) cand = (cand % FELL_BACK + 1) % k;
        ur[w++] = (unit_rec){.id = t->id,
                             .bytes = slot->bytes,
                             .order = u,
                             .leader = t->leader,
                             .rank = world_rank,
                             .cand = cand,
                             .calls = units[u].calls,
                             .in_calls = units[u].in_calls,
                             .span = units[u].span,
                             .cost = units[u].cost};
    }
    long nc, nu;
    comm_rec *comms = gathered(cr, ntracked, sizeof *cr, &nc);
    unit_rec *all = gathered(ur, whole, sizeof *ur, &nu);
    free(cr);
    free(ur);
    if (world_rank != 0) return NULL;
    qsort(comms, (size_t)nc, sizeof *comms, by_comm);
    qsort(all, (size_t)nu, sizeof *all, by_unit);
    static char why[256];
    const char *error = NULL;
    long total = 0; /* a communicator's units, each counted once */
    for (long i = 0, j; i < nc; i = j) {
        for (j = i; j < nc && comms[j].id == comms[i].id && comms[j].leader == comms[i].leader; ++j)
            if (comms[j].hash != comms[i].hash || comms[j].units != comms[i].units ||
                comms[j].calls != comms[i].calls)
                error = "the ranks made different assignments";
        if (!error && j - i != comms[i].size) error = "a rank of a communicator did not report";
        if (error) {
            snprintf(why, sizeof why,
                     "%s on a communicator of %d ranks (%ld of them heard): the race is "
                     "discarded, none of it is evidence",
                     error, comms[i].size, j - i);
            error = why;
            break;
        }
        total += comms[i].units;
        merged.raced += comms[i].calls;
    }
    if (!error) {
        merged.comm = malloc(sizeof(int) * (size_t)(total + 1));
        merged.slot = malloc(sizeof(int) * (size_t)(total + 1));
        merged.cand = malloc(sizeof(int) * (size_t)(total + 1));
        merged.calls = malloc(sizeof(int) * (size_t)(total + 1));
        merged.time = malloc(sizeof(double) * (size_t)(total + 1));
        merged.least = malloc(sizeof(double) * (size_t)(total + 1));
        merged.most = malloc(sizeof(double) * (size_t)(total + 1));
        merged.span = malloc(sizeof(double) * (size_t)(total + 1));
        merged.comm_ranks = malloc(sizeof(int) * (size_t)(nc + 1));
        long at = 0; /* the first unit record of the communicator under way */
        for (long i = 0, j; i < nc && !error; i = j) {
            for (j = i; j < nc && comms[j].id == comms[i].id && comms[j].leader == comms[i].leader;)
                ++j;
            int members = (int)(j - i), n = comms[i].units, g = merged.ncomms++;
            merged.comm_ranks[g] = comms[i].size;
            for (int u = 0; u < n; ++u) {
                unit_rec *first = &all[at + u];
                long m = merged.n++;
                merged.comm[m] = g;
                merged.slot[m] = merged_slot(comms[i].size, first->bytes);
                merged.cand[m] = first->cand;
                merged.calls[m] = first->calls;
                merged.time[m] = first->cost;
                merged.span[m] = first->span;
                merged.least[m] = merged.most[m] = first->in_calls;
                for (int r = 1; r < members; ++r) {
                    unit_rec *x = &all[at + (long)r * n + u];
                    if (x->cand != first->cand || x->calls != first->calls ||
                        x->bytes != first->bytes)
                        error = "the ranks made different assignments: the race is discarded, "
                                "none of it is evidence";
                    if (x->cost > merged.time[m]) merged.time[m] = x->cost;
                    if (x->span > merged.span[m]) merged.span[m] = x->span;
                    if (x->in_calls < merged.least[m]) merged.least[m] = x->in_calls;
                    if (x->in_calls > merged.most[m]) merged.most[m] = x->in_calls;
                }
            }
            at += (long)members * n;
        }
    }
    free(comms);
    free(all);
    return error;
}

/* The race's end, once: every rank's units combined at rank 0 and written, the variable put
 * back, every duplicate freed, MPI_T closed. */
static void race_finalize(void) {
    if (finalized || !out_path[0]) return;
    finalized = 1;
    double mine_cost[3] = {barrier_time, -barrier_time, MPI_Wtime() - started};
    double all_cost[3];
    PMPI_Allreduce(mine_cost, all_cost, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    cost[0] = -all_cost[1];
    cost[1] = all_cost[0];
    cost[2] = all_cost[2];
    const char *error = active ? merge() : NULL;
    if (world_rank == 0) write_race(error);
    if (have_handle) set_value(original);
    for (int i = 0; i < ntracked; ++i) /* the duplicates of the communicators still alive */
        forget(MPI_COMM_NULL, keyval, tracked[i], NULL);
    if (keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval);
    if (mpit_up) {
        if (have_handle) MPI_T_cvar_handle_free(&handle);
        if (have_handle2) MPI_T_cvar_handle_free(&handle2);
        if (have_fallback) MPI_T_cvar_handle_free(&fallback);
        MPI_T_finalize();
    }
}

int MPI_Finalize(void) {
    race_finalize();
    return PMPI_Finalize();
}

/* ---- Fortran: gfortran's names, forwarded to the library's own entry points ----
 * Open MPI's Fortran bindings call PMPI_* directly, so the C wrappers above never see a
 * Fortran program's calls. Each entry point converts the communicator and the size's handles,
 * routes the call as the C one, and hands the library's own Fortran entry point the
 * communicator it goes to; buffers (MPI_IN_PLACE, MPI_BOTTOM, descriptors) pass through
 * untouched. mpif.h and `use mpi` call mpi_<name>_ (forwarded to pmpi_<name>_); `use mpi_f08`
 * calls mpi_<name>_f08_ (forwarded to the next library's own: Open MPI's call PMPI_*, MPICH's
 * Init and Finalize do, its collectives (mpi_<name>_f08ts_) call the C bindings). A handle of
 * mpi_f08 is a derived type of one integer, passed by reference as mpif.h's is; its ierror is
 * optional (NULL where absent). MPICH's pmpi_<name>_ call the C bindings: inside a Fortran
 * call raced here those pass it on (``in_fortran``). */

static void *fortran(const char *symbol) { return dlsym(RTLD_NEXT, symbol); }

/* ``real``: the library's entry point ``NAME`` of type ``TYPE``; ``ierr`` made a local where
 * the caller gave none (mpi_f08's optional ierror). */
#define FORTRAN_REAL(TYPE, NAME)                                                                   \
    MPI_Fint ierr_local;                                                                           \
    if (!ierr) ierr = &ierr_local;                                                                 \
    static TYPE *real;                                                                             \
    if (!real) real = (TYPE *)fortran(NAME);                                                       \
    if (!real) {                                                                                   \
        *ierr = MPI_ERR_INTERN;                                                                    \
        return;                                                                                    \
    }

typedef void f_init(MPI_Fint *);
typedef void f_init_thread(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void f_finalize(MPI_Fint *);
typedef void f_allreduce(const void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                         MPI_Fint *);
typedef void f_bcast(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void f_reduce(const void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                      MPI_Fint *, MPI_Fint *);
typedef void f_gather(const void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *,
                      MPI_Fint *, MPI_Fint *);

/* The Fortran call of ``real``'s arguments with the communicator the race routes it to. */
#define FORTRAN_CALL(...)                                                                          \
    (f_comm = MPI_Comm_c2f(comm), in_fortran = 1, real(__VA_ARGS__), in_fortran = 0, (int)*ierr)

static void f_init_raced(f_init *real, MPI_Fint *ierr) {
    early_mpit();
    real(ierr);
    if (*ierr == MPI_SUCCESS) initialised(MPI_THREAD_SINGLE);
}

static void f_init_thread_raced(f_init_thread *real, MPI_Fint *required, MPI_Fint *provided,
                                MPI_Fint *ierr) {
    early_mpit();
    real(required, provided, ierr);
    if (*ierr == MPI_SUCCESS) initialised((int)*provided);
}

static void f_finalize_raced(f_finalize *real, MPI_Fint *ierr) {
    race_finalize();
    real(ierr);
}

static void f_allreduce_raced(f_allreduce *real, const void *sendbuf, void *recvbuf,
                              MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm_,
                              MPI_Fint *ierr) {
    if (raced_op != OP_ALLREDUCE || !active) {
        real(sendbuf, recvbuf, count, type, op, comm_, ierr);
        return;
    }
    MPI_Fint f_comm;
    RACED(MPI_Comm_f2c(*comm_), bytes_of((int)*count, MPI_Type_f2c(*type)), MPI_Op_f2c(*op),
          FORTRAN_CALL(sendbuf, recvbuf, count, type, op, &f_comm, ierr), *ierr)
}

static void f_bcast_raced(f_bcast *real, void *buffer, MPI_Fint *count, MPI_Fint *type,
                          MPI_Fint *root, MPI_Fint *comm_, MPI_Fint *ierr) {
    if (raced_op != OP_BCAST || !active) {
        real(buffer, count, type, root, comm_, ierr);
        return;
    }
    MPI_Fint f_comm;
    RACED(MPI_Comm_f2c(*comm_), bytes_of((int)*count, MPI_Type_f2c(*type)), MPI_OP_NULL,
          FORTRAN_CALL(buffer, count, type, root, &f_comm, ierr), *ierr)
}

static void f_reduce_raced(f_reduce *real, const void *sendbuf, void *recvbuf, MPI_Fint *count,
                           MPI_Fint *type, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm_,
                           MPI_Fint *ierr) {
    if (raced_op != OP_REDUCE || !active) {
        real(sendbuf, recvbuf, count, type, op, root, comm_, ierr);
        return;
    }
    MPI_Fint f_comm;
    RACED(MPI_Comm_f2c(*comm_), bytes_of((int)*count, MPI_Type_f2c(*type)), MPI_Op_f2c(*op),
          FORTRAN_CALL(sendbuf, recvbuf, count, type, op, root, &f_comm, ierr), *ierr)
}

/* allgather and alltoall (``which``): the stratum from the receive side, as in C */
static void f_gather_raced(f_gather *real, int which, const void *sendbuf, MPI_Fint *sendcount,
                           MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount,
                           MPI_Fint *recvtype, MPI_Fint *comm_, MPI_Fint *ierr) {
    if (raced_op != which || !active) {
        real(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm_, ierr);
        return;
    }
    MPI_Fint f_comm;
    RACED(MPI_Comm_f2c(*comm_), bytes_of((int)*recvcount, MPI_Type_f2c(*recvtype)), MPI_OP_NULL,
          FORTRAN_CALL(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, &f_comm, ierr),
          *ierr)
}

/* Both bindings' entry points of each call: mpi_<name>_ forwarded to pmpi_<name>_, and
 * mpi_<name>_f08_ to the next library's own */
#define FORTRAN_ENTRIES(NAME, TYPE, PARAMS, ARGS, ...)                                             \
    void mpi_##NAME##_ PARAMS {                                                                    \
        FORTRAN_REAL(TYPE, "pmpi_" #NAME "_")                                                      \
        f_##NAME##_raced ARGS;                                                                     \
    }                                                                                              \
    void mpi_##NAME##_f08_ PARAMS {                                                                \
        FORTRAN_REAL(TYPE, "mpi_" #NAME "_f08_")                                                   \
        f_##NAME##_raced ARGS;                                                                     \
    }

FORTRAN_ENTRIES(init, f_init, (MPI_Fint * ierr), (real, ierr))
FORTRAN_ENTRIES(init_thread, f_init_thread,
                (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr),
                (real, required, provided, ierr))
FORTRAN_ENTRIES(finalize, f_finalize, (MPI_Fint * ierr), (real, ierr))
FORTRAN_ENTRIES(allreduce, f_allreduce,
                (const void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *o, MPI_Fint *c,
                 MPI_Fint *ierr),
                (real, s, r, n, t, o, c, ierr))
FORTRAN_ENTRIES(bcast, f_bcast,
                (void *b, MPI_Fint *n, MPI_Fint *t, MPI_Fint *root, MPI_Fint *c, MPI_Fint *ierr),
                (real, b, n, t, root, c, ierr))
FORTRAN_ENTRIES(reduce, f_reduce,
                (const void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *o, MPI_Fint *root,
                 MPI_Fint *c, MPI_Fint *ierr),
                (real, s, r, n, t, o, root, c, ierr))

#define f_allgather_raced(real, ...) f_gather_raced(real, OP_ALLGATHER, __VA_ARGS__)
#define f_alltoall_raced(real, ...) f_gather_raced(real, OP_ALLTOALL, __VA_ARGS__)
FORTRAN_ENTRIES(allgather, f_gather,
                (const void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt,
                 MPI_Fint *c, MPI_Fint *ierr),
                (real, s, sn, st, r, rn, rt, c, ierr))
FORTRAN_ENTRIES(alltoall, f_gather,
                (const void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt,
                 MPI_Fint *c, MPI_Fint *ierr),
                (real, s, sn, st, r, rn, rt, c, ierr))
