/* ct_io: a VPIC-IO-like parallel write kernel (the I/O workload of the Behzad et al. tuner).
 *
 *   ct_io [-n PARTICLES] [-m mpiio|hdf5] [--io-dir DIR] [-k] [--damage]
 *
 * Each rank writes PARTICLES particles (default 1M; K and M suffixes) with 8 variables, the
 * VPIC-IO layout: x, y, z, px, py, pz (float) and id1, id2 (int), each variable one 1-D array
 * of every rank's particles in rank order, in one shared file in DIR (--io-dir or -d; default
 * /var/tmp, on disk on Debian, not the tmpfs /tmp may be; a tmpfs DIR is warned about, since
 * its write times measure memory, not storage). mpiio: the arrays one after the other, each written
 * with MPI_File_write_at_all; hdf5 (built only against a parallel HDF5, CT_HDF5): 8 datasets
 * written collectively. Timed from before the open to after the close, a flush to storage
 * (MPI_File_sync / H5Fflush) included, the slowest rank's time.
 *
 * Then every value is read back and compared: a configuration that corrupts data fails (exit
 * status 3), it is never fast. --damage overwrites bytes of the file between the write and the
 * read-back (for the test that proves the check). The file is removed at the end unless -k.
 * Output, rank 0: "write time T s" and one JSON line:
 *   {"mode":"mpiio","ranks":2,"particles":N,"bytes":B,"write_s":T,"bandwidth_mib_s":W,
 *    "verified":true}
 * Usage errors (a bad option, a directory that cannot be written) exit with status 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "../include/ct_usage.h"
#ifdef CT_HDF5
#include <hdf5.h>
#endif

#define N_VARS 8
#define TMPFS_MAGIC_NUMBER 0x01021994

/* The value of variable `v` of global particle `g`: floats for 0-5, ints for 6-7, both 4 bytes,
 * every one distinct so a misplaced block is caught as surely as a damaged one. */
static void fill(void *out, int v, long first, long n) {
    if (v < 6) {
        float *f = out;
        for (long i = 0; i < n; ++i)
            f[i] = (float)((first + i) % 1000003) * 0.5f + (float)v;
    } else {
        int *k = out;
        for (long i = 0; i < n; ++i)
            k[i] = (int)(((first + i) * N_VARS + v) & 0x7fffffff);
    }
}

static long parse_count(const char *text) {
    char *end = NULL;
    long n = strtol(text, &end, 10);
    if (end && (*end == 'K' || *end == 'k'))
        n <<= 10, ++end;
    else if (end && (*end == 'M' || *end == 'm'))
        n <<= 20, ++end;
    return (end && *end == '\0' && n > 0) ? n : -1;
}

/* Called by every rank alike (a collective call's failure counts as one). */
static void usage_error(const char *message, const char *what) {
    ct_usage_exit("ct_io: %s%s\n", message, what ? what : "");
}

/* Rank 0 overwrites 64 bytes in the middle of the file (a damaged storage, for the test). */
static void damage(const char *path) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return;
    off_t size = lseek(fd, 0, SEEK_END);
    char junk[64];
    memset(junk, 0x5a, sizeof junk);
    if (pwrite(fd, junk, sizeof junk, size / 2) != (ssize_t)sizeof junk) perror("ct_io: damage");
    fsync(fd);
    close(fd);
}

static long compare(const void *got, const void *want, long n) {
    const unsigned *a = got, *b = want;
    long bad = 0;
    for (long i = 0; i < n; ++i)
        bad += a[i] != b[i];
    return bad;
}

/* -- MPI-IO -------------------------------------------------------------------------------- */
static void mpiio_write(const char *path, long n, long first, long total, void *buf) {
    MPI_File fh;
    int err =
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    if (err != MPI_SUCCESS) usage_error("cannot create the file in the directory: ", path);
    for (int v = 0; v < N_VARS; ++v) {
        fill(buf, v, first, n);
        MPI_Offset at = ((MPI_Offset)v * total + first) * 4;
        MPI_File_write_at_all(fh, at, buf, (int)n, MPI_INT, MPI_STATUS_IGNORE);
    }
    MPI_File_sync(fh);
    MPI_File_close(&fh);
}

static long mpiio_check(const char *path, long n, long first, long total, void *buf, void *want) {
    MPI_File fh;
    long bad = 0;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        return n * N_VARS;
    for (int v = 0; v < N_VARS; ++v) {
        fill(want, v, first, n);
        MPI_Offset at = ((MPI_Offset)v * total + first) * 4;
        MPI_File_read_at_all(fh, at, buf, (int)n, MPI_INT, MPI_STATUS_IGNORE);
        bad += compare(buf, want, n);
    }
    MPI_File_close(&fh);
    return bad;
}

/* -- HDF5 ---------------------------------------------------------------------------------- */
#ifdef CT_HDF5
static const char *const var_names[N_VARS] = {"x", "y", "z", "px", "py", "pz", "id1", "id2"};

static hid_t h5_type(int v) { return v < 6 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT; }

static void hdf5_write(const char *path, long n, long first, long total, void *buf) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (file < 0) usage_error("cannot create the HDF5 file: ", path);
    hsize_t dims = (hsize_t)total, count = (hsize_t)n, start = (hsize_t)first;
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    hid_t memspace = H5Screate_simple(1, &count, NULL);
    for (int v = 0; v < N_VARS; ++v) {
        hid_t space = H5Screate_simple(1, &dims, NULL);
        hid_t set = H5Dcreate2(file, var_names[v], h5_type(v), space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL);
        fill(buf, v, first, n);
        H5Dwrite(set, h5_type(v), memspace, space, dxpl, buf);
        H5Dclose(set);
        H5Sclose(space);
    }
    H5Sclose(memspace);
    H5Pclose(dxpl);
    H5Fflush(file, H5F_SCOPE_GLOBAL);
    H5Fclose(file);
}

static long hdf5_check(const char *path, long n, long first, void *buf, void *want) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (file < 0) return n * N_VARS;
    hsize_t count = (hsize_t)n, start = (hsize_t)first;
    hid_t memspace = H5Screate_simple(1, &count, NULL);
    long bad = 0;
    for (int v = 0; v < N_VARS; ++v) {
        hid_t set = H5Dopen2(file, var_names[v], H5P_DEFAULT);
        if (set < 0) {
            bad += n;
            continue;
        }
        hid_t space = H5Dget_space(set);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL);
        fill(want, v, first, n);
        if (H5Dread(set, h5_type(v), memspace, space, H5P_DEFAULT, buf) < 0)
            bad += n;
        else
            bad += compare(buf, want, n);
        H5Sclose(space);
        H5Dclose(set);
    }
    H5Sclose(memspace);
    H5Fclose(file);
    return bad;
}
#endif

int main(int argc, char **argv) {
    int rank, ranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    long n = 1L << 20;
    const char *mode = "mpiio", *dir = access("/var/tmp", W_OK) == 0 ? "/var/tmp" : ".";
    int keep = 0, spoil = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            n = parse_count(argv[++i]);
            if (n < 0 || n > (1L << 28)) usage_error("bad particle count: ", argv[i]);
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            mode = argv[++i];
        } else if ((!strcmp(argv[i], "-d") || !strcmp(argv[i], "--io-dir")) && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "-k")) {
            keep = 1;
        } else if (!strcmp(argv[i], "--damage")) {
            spoil = 1;
        } else {
            usage_error("usage: ct_io [-n PARTICLES] [-m mpiio|hdf5] [--io-dir DIR] [-k]", NULL);
        }
    }
    int hdf5 = !strcmp(mode, "hdf5");
    if (!hdf5 && strcmp(mode, "mpiio")) usage_error("unknown mode: ", mode);
#ifndef CT_HDF5
    if (hdf5) usage_error("built without parallel HDF5: use -m mpiio", NULL);
#endif
    int writable = rank != 0 || access(dir, W_OK) == 0;
    MPI_Bcast(&writable, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!writable) usage_error("cannot write to the directory: ", dir);
    struct statfs fs;
    if (rank == 0 && statfs(dir, &fs) == 0 && (unsigned long)fs.f_type == TMPFS_MAGIC_NUMBER)
        fprintf(stderr,
                "ct_io: warning: %s is tmpfs: the write time measures memory, not "
                "storage\n",
                dir);
    /* one name for all ranks: rank 0's pid, so concurrent runs never share a file */
    char path[4096];
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/ct_io.%ld.%s", dir, pid, hdf5 ? "h5" : "dat");
    long total = n * ranks, first = n * rank;
    void *buf = malloc((size_t)n * 4), *want = malloc((size_t)n * 4);
    if (!buf || !want) { /* one rank's failure: the others are not told, so abort */
        fprintf(stderr, "ct_io: out of memory for the particles\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
#ifdef CT_HDF5
    if (hdf5)
        hdf5_write(path, n, first, total, buf);
    else
#endif
        mpiio_write(path, n, first, total, buf);
    double mine = MPI_Wtime() - t0, slowest = 0.0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    if (spoil && rank == 0) damage(path);
    MPI_Barrier(MPI_COMM_WORLD);
    long bad = 0, bad_all = 0;
#ifdef CT_HDF5
    if (hdf5)
        bad = hdf5_check(path, n, first, buf, want);
    else
#endif
        bad = mpiio_check(path, n, first, total, buf, want);
    MPI_Allreduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && !keep && unlink(path) != 0 && errno != ENOENT) perror("ct_io: remove");

    double bytes = (double)total * N_VARS * 4;
    if (rank == 0) {
        if (bad_all) {
            fprintf(stderr, "ct_io: read-back: %ld of %ld values differ from what was written\n",
                    bad_all, total * N_VARS);
        } else {
            printf("write time %.6f s\n", slowest);
            printf(
                "{\"mode\":\"%s\",\"ranks\":%d,\"particles\":%ld,\"bytes\":%.0f,\"write_s\":%.6f,"
                "\"bandwidth_mib_s\":%.2f,\"verified\":true}\n",
                mode, ranks, n, bytes, slowest, bytes / slowest / (1 << 20));
        }
        fflush(stdout);
    }
    free(buf);
    free(want);
    MPI_Finalize();
    return bad_all ? 3 : 0;
}
