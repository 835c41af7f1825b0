/* libctrace: one collective's algorithms raced call by call inside one run (issue 77).
 *
 * Preloaded alone (LD_PRELOAD) into every rank of an unchanged program. Each call of the raced
 * collective on a communicator of the world's size is assigned a candidate algorithm in
 * randomized complete blocks: the calls of one message size (the same on every rank) form a
 * stratum, and every block of K calls of a stratum holds each of the K candidates once, in an
 * order drawn from COMMTUNE_RACE_SEED, the stratum and the block's number alone, so every rank
 * draws the same order (never from local timings: a rank that chose differently would
 * deadlock). The first candidate is the reference: the library's own decision.
 *
 * A unit of the blocks is a run of COMMTUNE_RACE_RUN consecutive calls of a stratum (R, default
 * 1), all made by one candidate; its time is the sum of its calls' times. Calls made back to
 * back carry cost over: a call whose sends completed into the network's buffers hands their
 * cost to the calls after it, and a pipelined algorithm streams through consecutive calls of
 * its own. Timed one call at a time between other candidates' calls, such a collective is
 * ranked against what the program pays (a broadcast raced call by call on the bed ranked the
 * algorithms the other way round from whole runs). With COMMTUNE_RACE_DRAIN=1 each unit starts
 * with a barrier on the call's communicator: every rank has ended every earlier call, so what
 * the last unit sent has arrived, and a unit of R calls times what R consecutive calls cost
 * (commtune races so). A unit's length doubles every GROW_BLOCKS blocks of its stratum, from R
 * up to COMMTUNE_RACE_RUN_MAX: a long run pays a barrier every few hundred calls, not every R,
 * and every unit of a block still has one length (the JSON's "unit_calls"). The time ranks
 * spent in those barriers is written too ("barrier": the least and the most any rank spent,
 * "span": the run's time from MPI_Init's end to MPI_Finalize's start): racing's own cost.
 *
 * How a candidate is applied (COMMTUNE_RACE_MODE):
 *   call  MPICH: the MPI_T control variable is written before every call (MPICH reads
 *         MPIR_CVAR_<COLL>_INTRA_ALGORITHM at every call; the launch sets
 *         MPIR_CVAR_DEVICE_COLLECTIVES=none so that it governs the whole call). An algorithm
 *         whose restrictions a call does not meet falls back to the library's own choice,
 *         silently: the first call of each candidate at each message size is made with
 *         MPIR_CVAR_COLLECTIVE_FALLBACK=error and MPI_ERRORS_RETURN on its communicator
 *         (both put back after it); a candidate refused there is made again as the
 *         reference, and its later calls of that size run the reference, marked (the
 *         candidate's number + 128), never evidence;
 *   dup   Open MPI: coll/tuned copies coll_tuned_<coll>_algorithm when a communicator is made,
 *         so at the first raced call on a communicator the variable is written and the
 *         communicator duplicated once per candidate (then written back), and each call goes
 *         to its candidate's duplicate. It needs coll_tuned_use_dynamic_rules=1 at launch:
 *         without it the write does nothing, and the race is refused.
 *
 * Each rank times its calls with MPI_Wtime; at MPI_Finalize the units' times are combined
 * across the ranks and rank 0 writes COMMTUNE_RACE_OUT (JSON): the candidates, the assignment
 * and, for every complete unit, the slowest rank's time ("time": with the wait for ranks that
 * arrive late) and the shortest ("time_last": with R = 1 the last rank to arrive's, the call's
 * own cost). A stratum's last unit, if the run ended inside it, is left out.
 * A setup that cannot race (no such variable, a value out of range, dynamic rules off) is
 * written there as "refused" with the reason, and the program runs untouched.
 *
 *   COMMTUNE_RACE_OP      allreduce | bcast | reduce | allgather | alltoall
 *   COMMTUNE_RACE_CVAR    the MPI_T name of the variable choosing its algorithm
 *   COMMTUNE_RACE_VALUES  the candidates' integer codes, comma-separated, the reference first
 *   COMMTUNE_RACE_MODE    call | dup
 *   COMMTUNE_RACE_SEED    the blocks' seed (an unsigned integer)
 *   COMMTUNE_RACE_OUT     the JSON file rank 0 writes
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
 */
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
#define MAX_COMMS 64
#define MAX_CALLS (1L << 21)
#define MAX_SLOTS 64   /* message sizes raced apart; more share the last */
#define GROW_BLOCKS 24 /* a stratum's blocks between two doublings of its units' length */

enum { MODE_CALL, MODE_DUP };
enum { OP_NONE, OP_ALLREDUCE, OP_BCAST, OP_REDUCE, OP_ALLGATHER, OP_ALLTOALL };
static const char *const OP_NAMES[] = {"", "allreduce", "bcast", "reduce", "allgather", "alltoall"};
static int raced_op; /* the wrappers compare this, not a string, on every call */

static int active;
static int mode;
static char op_name[32];
static char cvar_name[256];
static char out_path[4096];
static char refused[512];
static int values[MAX_CANDIDATES];
static int k;
static uint64_t seed;
static int world_size;
static MPI_T_cvar_handle handle;
static int have_handle;
static int mpit_up;
static int original;
static MPI_T_cvar_handle handle2; /* COMMTUNE_RACE_CVAR2, where given */
static int have_handle2, original2;
static int values2[MAX_CANDIDATES];
static int share = 1; /* COMMTUNE_RACE_SHARE=0: every label its own duplicate */

static int run = 1;         /* the calls of a unit, at first */
static int run_max;         /* and at most, as it doubles */
static int drain;           /* a barrier before each unit: what the last one sent has arrived */
static volatile int *watch; /* COMMTUNE_RACE_WATCH's page: [0] the call under way, [1] the last */

static long calls; /* raced calls made */
static long units; /* units begun */
static long capacity;
static unsigned char *assigned; /* per unit: its candidate (+ FELL_BACK: the reference ran) */
static unsigned char *slot_of_unit;
static double *times;
static int *unit_calls;     /* per unit: its calls (its block's length) */
static double barrier_time; /* this rank's time in the units' barriers */
static double started;      /* MPI_Wtime at MPI_Init's end */
static int cur_slot;        /* the stratum and the unit of the call under way */
static long cur_unit;

#define FELL_BACK 128 /* added to a call's candidate: it ran as the reference */

static struct {
    long bytes;
    long calls;
    long made; /* its units begun */
    long left; /* the calls its current unit still takes */
    long unit; /* the unit its calls go to */
    int order[MAX_CANDIDATES];
    unsigned char probed[MAX_CANDIDATES];    /* its first call at this size made under check */
    unsigned char fell_back[MAX_CANDIDATES]; /* the library refused it at this size */
} slots[MAX_SLOTS];
static int nslots;

static struct {
    MPI_Comm comm;
    MPI_Comm dups[MAX_CANDIDATES];
} comms[MAX_COMMS];
static int ncomms;

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* The order of block ``block`` of stratum ``s``: a Fisher-Yates shuffle drawn from the seed,
 * the stratum and the block. */
static void draw_order(int s, long block) {
    int *order = slots[s].order;
    uint64_t state = seed ^ ((uint64_t)block * 0xD1B54A32D192ED03ULL) ^
                     ((uint64_t)(s + 1) * 0x8CB92BA72F3D8DD7ULL);
    for (int i = 0; i < k; ++i)
        order[i] = i;
    for (int i = k - 1; i > 0; --i) {
        int j = (int)(splitmix(&state) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The stratum of a call of ``bytes`` bytes (every rank sees the sizes in the same order). */
static int slot_of(long bytes) {
    for (int i = 0; i < nslots; ++i)
        if (slots[i].bytes == bytes) return i;
    if (nslots == MAX_SLOTS) return MAX_SLOTS - 1;
    slots[nslots].bytes = bytes;
    return nslots++;
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
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char name[4200];
    snprintf(name, sizeof name, "%s.%d", path, rank);
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

static void setup(void) {
    if (!asked()) return;
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
    active = 1;
    map_watch();
    if (run < 1) return refuse("COMMTUNE_RACE_RUN below 1");
    k = parse_values(vals, values);
    if (k < 2) return refuse("fewer than two candidates");
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
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
    capacity = 4096;
    assigned = malloc((size_t)capacity);
    slot_of_unit = malloc((size_t)capacity);
    times = malloc(sizeof(double) * (size_t)capacity);
    unit_calls = malloc(sizeof(int) * (size_t)capacity);
}

/* The calls of a unit in block ``block`` of a stratum: ``run``, doubled every GROW_BLOCKS
 * blocks while within ``run_max`` (the same on every rank: a function of the block alone). */
static long unit_length(long block) {
    long len = run;
    for (long g = block / GROW_BLOCKS; g > 0 && len * 2 <= run_max; --g)
        len *= 2;
    return len;
}

/* A new unit of stratum ``s`` for candidate ``c`` of ``len`` calls: its number. */
static long new_unit(int s, int c, long len) {
    if (units == capacity) {
        capacity *= 2;
        assigned = realloc(assigned, (size_t)capacity);
        slot_of_unit = realloc(slot_of_unit, (size_t)capacity);
        times = realloc(times, sizeof(double) * (size_t)capacity);
        unit_calls = realloc(unit_calls, sizeof(int) * (size_t)capacity);
    }
    assigned[units] = (unsigned char)c;
    slot_of_unit[units] = (unsigned char)s;
    times[units] = 0.0;
    unit_calls[units] = (int)len;
    slots[s].left = len;
    slots[s].unit = units;
    return units++;
}

/* The communicator a call of candidate ``c`` on ``comm`` goes to (Open MPI: its duplicate). */
static MPI_Comm route(MPI_Comm comm, int c) {
    if (mode == MODE_CALL) {
        set_value(values[c]);
        return comm;
    }
    for (int i = 0; i < ncomms; ++i)
        if (comms[i].comm == comm) return comms[i].dups[c];
    if (ncomms == MAX_COMMS) return MPI_COMM_NULL;
    comms[ncomms].comm = comm;
    for (int i = 0; i < k; ++i) { /* collective: every rank is at this same call */
        int same = i;             /* two labels of one value share one duplicate (A/A) */
        for (int j = 0; j < i && share; ++j)
            if (values[j] == values[i] && values2[j] == values2[i]) same = j;
        if (same != i) {
            comms[ncomms].dups[i] = comms[ncomms].dups[same];
            continue;
        }
        write_value(values[i]);
        if (have_handle2) write_second(values2[i] < 0 ? original2 : values2[i]);
        PMPI_Comm_dup(comm, &comms[ncomms].dups[i]);
    }
    write_value(original);
    if (have_handle2) write_second(original2);
    return comms[ncomms++].dups[c];
}

/* The candidate of the next raced call on ``comm`` of ``count`` elements of ``type`` and where
 * it goes; -1: not raced. A unit's calls all go to its candidate. */
static int begin(MPI_Comm comm, int count, MPI_Datatype type, MPI_Comm *use) {
    *use = comm;
    if (!active) return -1;
    int size;
    PMPI_Comm_size(comm, &size);
    if (calls >= MAX_CALLS || size != world_size || size < 2) {
        if (mode == MODE_CALL) set_value(original); /* an unraced call: the library's own */
        return -1;
    }
    int size_of = 0;
    PMPI_Type_size(type, &size_of);
    int s = slot_of((long)count * size_of);
    if (slots[s].left == 0) { /* a new unit: the next candidate of the block */
        long u = slots[s].made++;
        if (drain) { /* every rank has ended every earlier call */
            double t = MPI_Wtime();
            PMPI_Barrier(comm);
            barrier_time += MPI_Wtime() - t;
        }
        if (u % k == 0) draw_order(s, u / k);
        new_unit(s, slots[s].order[u % k], unit_length(u / k));
    }
    slots[s].calls++;
    slots[s].left--;
    cur_slot = s;
    cur_unit = slots[s].unit;
    int c = assigned[cur_unit] % FELL_BACK;
    if (slots[s].fell_back[c]) { /* refused at this size: the reference runs, marked */
        route(comm, 0);
        assigned[cur_unit] = (unsigned char)(c + FELL_BACK);
        return c + FELL_BACK;
    }
    MPI_Comm to = route(comm, c);
    if (to == MPI_COMM_NULL) return -1;
    *use = to;
    return c;
}

/* Whether the call of candidate ``c`` (at the stratum just assigned) is its first at this size
 * and is to be made under check: MPICH with the fallback variable found, not the reference. */
static int probing(int c) {
    if (c <= 0 || c >= FELL_BACK || !have_fallback) return 0;
    if (slots[cur_slot].probed[c]) return 0;
    slots[cur_slot].probed[c] = 1;
    return 1;
}

/* The first call of a candidate at a size, made with fallback as an error and errors returned
 * on ``comm``; refused: marked, and the call made again as the reference (every rank checks
 * the same restrictions on the same arguments, so every rank takes the same branch). */
#define PROBED(CALL, C)                                                                            \
    {                                                                                              \
        MPI_Errhandler was;                                                                        \
        PMPI_Comm_get_errhandler(comm, &was);                                                      \
        PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);                                         \
        MPI_T_cvar_write(fallback, &fallback_error);                                               \
        rc = CALL;                                                                                 \
        MPI_T_cvar_write(fallback, &fallback_original);                                            \
        PMPI_Comm_set_errhandler(comm, was);                                                       \
        PMPI_Errhandler_free(&was);                                                                \
        if (rc != MPI_SUCCESS) {                                                                   \
            slots[cur_slot].fell_back[C] = 1;                                                      \
            C += FELL_BACK;                                                                        \
            assigned[cur_unit] = (unsigned char)C;                                                 \
            set_value(values[0]);                                                                  \
            t0 = MPI_Wtime();                                                                      \
            rc = CALL;                                                                             \
        }                                                                                          \
    }

static void end(int c, double t0) {
    if (c < 0) return;
    times[cur_unit] += MPI_Wtime() - t0;
    if (watch) {
        watch[0] = 0;
        watch[1] = c + 1;
    }
    ++calls;
}

/* The complete units, kept in order (a stratum's last unit, where its calls are not a whole
 * number of units, ended inside the run; the same on every rank, as the calls are): their
 * number. */
static long complete_units(void) {
    long kept = 0;
    for (long u = 0; u < units; ++u) {
        int s = slot_of_unit[u];
        if (u == slots[s].unit && slots[s].left != 0) continue;
        assigned[kept] = assigned[u];
        slot_of_unit[kept] = slot_of_unit[u];
        unit_calls[kept] = unit_calls[u];
        times[kept++] = times[u];
    }
    return kept;
}

#define RACED(OP, COUNT, TYPE, CALL)                                                               \
    if (raced_op != OP) return CALL;                                                               \
    MPI_Comm use;                                                                                  \
    int c = begin(comm, COUNT, TYPE, &use);                                                        \
    double t0 = MPI_Wtime();                                                                       \
    comm = use;                                                                                    \
    if (watch && c >= 0) watch[0] = c + 1;                                                         \
    int rc;                                                                                        \
    if (probing(c))                                                                                \
        PROBED(CALL, c)                                                                            \
    else                                                                                           \
        rc = CALL;                                                                                 \
    end(c, t0);                                                                                    \
    return rc;

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
    RACED(OP_ALLREDUCE, count, datatype,
          PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm))
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    RACED(OP_BCAST, count, datatype, PMPI_Bcast(buffer, count, datatype, root, comm))
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
    RACED(OP_REDUCE, count, datatype,
          PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm))
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    RACED(OP_ALLGATHER, sendcount, sendtype,
          PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    RACED(OP_ALLTOALL, sendcount, sendtype,
          PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
}

/* MPI_T made ready before MPI_Init where a race is asked for: Open MPI 4.1 then opens its
 * components once for both (after MPI_Init, MPI_T_init_thread took 0.21 s of a 0.53 s run of
 * 2 ranks here; before it, the two together 0.24 s). The standard allows either order. */
static void early_mpit(void) {
    int provided;
    if (asked()) mpit_up = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv) {
    early_mpit();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) setup();
    started = MPI_Wtime();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    early_mpit();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) setup();
    started = MPI_Wtime();
    return rc;
}

static void write_times(FILE *out, const char *key, const double *times_of, long n) {
    fprintf(out, ", \"%s\": [", key);
    for (long i = 0; i < n; ++i)
        fprintf(out, "%s%.9g", i ? "," : "", times_of[i]);
    fputs("]", out);
}

/* What racing itself cost: the least and the most any rank spent in the units' barriers, and
 * the run's time (the slowest rank's), from MPI_Init's end to MPI_Finalize's start. */
static double cost[3];

static void write_race(const double *slowest, const double *last, long n, const char *error) {
    FILE *out = fopen(out_path, "w");
    if (!out) return;
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
    fprintf(out, ", \"run\": %d, \"run_max\": %d, \"drain\": %d, \"raced_calls\": %ld", run,
            run_max, drain, calls);
    fprintf(out, ", \"barrier\": [%.9g, %.9g], \"span\": %.9g", cost[0], cost[1], cost[2]);
    fprintf(out, ", \"calls\": %ld, \"candidate\": [", n);
    for (long i = 0; i < n; ++i)
        fprintf(out, "%s%d", i ? "," : "", assigned[i]);
    fputs("], \"slot\": [", out);
    for (long i = 0; i < n; ++i)
        fprintf(out, "%s%d", i ? "," : "", slot_of_unit[i]);
    fputs("], \"unit_calls\": [", out);
    for (long i = 0; i < n; ++i)
        fprintf(out, "%s%d", i ? "," : "", unit_calls[i]);
    fputs("], \"slot_bytes\": [", out);
    for (int i = 0; i < nslots; ++i)
        fprintf(out, "%s%ld", i ? "," : "", slots[i].bytes);
    fputs("], \"fell_back\": [", out);
    int first = 1;
    for (int i = 0; i < nslots; ++i)
        for (int c = 1; c < k; ++c)
            if (slots[i].fell_back[c]) {
                fprintf(out, "%s[%d,%d]", first ? "" : ",", i, c);
                first = 0;
            }
    fputs("]", out);
    write_times(out, "time", slowest, n);
    write_times(out, "time_last", last, n);
    fputs("}\n", out);
    fclose(out);
}

int MPI_Finalize(void) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (out_path[0]) {
        double mine_cost[3] = {barrier_time, -barrier_time, MPI_Wtime() - started};
        double all_cost[3];
        PMPI_Allreduce(mine_cost, all_cost, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        cost[0] = -all_cost[1];
        cost[1] = all_cost[0];
        cost[2] = all_cost[2];
        long whole = active ? complete_units() : 0;
        long mine[2] = {whole, -whole}, both[2] = {0, 0};
        PMPI_Allreduce(mine, both, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
        const char *error =
            both[0] != -both[1] ? "the ranks made different numbers of raced calls" : NULL;
        long n = error ? 0 : whole;
        double *slowest = n && rank == 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
        double *last = n && rank == 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
        for (long at = 0; at < n; at += 65536) { /* the slowest rank's time of every call */
            int len = (int)(n - at < 65536 ? n - at : 65536);
            PMPI_Reduce(times + at, slowest ? slowest + at : NULL, len, MPI_DOUBLE, MPI_MAX, 0,
                        MPI_COMM_WORLD);
            /* the shortest: the last rank to arrive's, whose wait for the others is none */
            PMPI_Reduce(times + at, last ? last + at : NULL, len, MPI_DOUBLE, MPI_MIN, 0,
                        MPI_COMM_WORLD);
        }
        if (rank == 0) write_race(slowest, last, n, error);
        if (have_handle) set_value(original);
        free(slowest);
        free(last);
        for (int i = 0; i < ncomms; ++i)
            for (int c = 0; c < k; ++c) {
                int first = 1; /* a duplicate two labels share is freed once */
                for (int j = 0; j < c && share; ++j)
                    if (values[j] == values[c] && values2[j] == values2[c]) first = 0;
                if (first) PMPI_Comm_free(&comms[i].dups[c]);
            }
        if (mpit_up) {
            if (have_handle) MPI_T_cvar_handle_free(&handle);
            if (have_handle2) MPI_T_cvar_handle_free(&handle2);
            if (have_fallback) MPI_T_cvar_handle_free(&fallback);
            MPI_T_finalize();
        }
    }
    return PMPI_Finalize();
}
