// A C++ program raced in-run (issue 93): the C bindings from C++, a std::vector summed over
// the world ITERATIONS times and each 4th iteration a broadcast on a communicator split in
// reversed rank order (then freed), each result checked (a wrong one: MPI_Abort). Rank 0
// prints a checksum and "race_cxx ok".
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int iterations = argc > 1 ? std::atoi(argv[1]) : 400;
    std::vector<double> x(512), y(512);
    double checksum = 0;
    for (int i = 1; i <= iterations; ++i) {
        for (auto &v : x)
            v = rank + i;
        MPI_Allreduce(x.data(), y.data(), static_cast<int>(x.size()), MPI_DOUBLE, MPI_SUM,
                      MPI_COMM_WORLD);
        for (double v : y)
            if (v != size * (size - 1) / 2.0 + size * static_cast<double>(i)) {
                std::fprintf(stderr, "race_cxx: wrong allreduce at %d on rank %d\n", i, rank);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        checksum += y.back();
        if (i % 4 == 0) {
            MPI_Comm c;
            MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &c);
            std::vector<int> words(128, rank == size - 1 ? i : -1);
            MPI_Bcast(words.data(), static_cast<int>(words.size()), MPI_INT, 0, c);
            for (int w : words)
                if (w != i) {
                    std::fprintf(stderr, "race_cxx: wrong broadcast at %d on rank %d\n", i, rank);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            MPI_Comm_free(&c);
        }
    }
    if (rank == 0) std::printf("race_cxx checksum %.1f\nrace_cxx ok\n", checksum);
    MPI_Finalize();
    return 0;
}
