// An application that initialised MPI itself passes its communicator: the bootstrap must span
// exactly that communicator (here: the even or the odd ranks of MPI_COMM_WORLD) and must leave
// MPI initialised for the application to finalise.
#include <mpi.h>

#include <cstdio>
#include <random>
#include <vector>

#include "runtime/bootstrap/bootstrap.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  int half_rank = 0, half_size = 0;
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  int failed = 0;
  {
    vshmem::BootstrapOptions options;
    options.mpi_comm = &half;
    auto boot = vshmem::create_bootstrap(options);
    if (!boot) {
      std::fprintf(stderr, "world rank %d: %s\n", world_rank, boot.status().message().c_str());
      failed = 1;
    } else if ((*boot)->rank() != half_rank || (*boot)->size() != half_size ||
               std::string((*boot)->name()) != "mpi") {
      std::fprintf(stderr, "world rank %d: bootstrap %s rank %d/%d, expected mpi %d/%d\n",
                   world_rank, (*boot)->name(), (*boot)->rank(), (*boot)->size(), half_rank,
                   half_size);
      failed = 1;
    } else {
      // Fresh data: every PE contributes its world rank and a random tag.
      std::mt19937_64 gen(std::random_device{}());
      long mine[2] = {world_rank, static_cast<long>(gen() >> 1)};
      std::vector<long> all(2 * half_size, -1);
      vshmem::Status st = (*boot)->allgather(mine, all.data(), sizeof(mine));
      if (!st) {
        std::fprintf(stderr, "world rank %d: %s\n", world_rank, st.message().c_str());
        failed = 1;
      }
      for (int i = 0; st && i < half_size; ++i) {
        if (all[2 * i] != 2 * i + world_rank % 2) failed = 1;
      }
      if (st && all[2 * half_rank + 1] != mine[1]) failed = 1;
      if (failed) std::fprintf(stderr, "world rank %d: wrong allgather data\n", world_rank);
    }
  }
  // MPI must still be usable after the bootstrap is gone.
  int finalized = 1;
  MPI_Finalized(&finalized);
  int any_failed = 0;
  if (finalized) {
    std::fprintf(stderr, "world rank %d: the bootstrap finalised the application's MPI\n",
                 world_rank);
    return 1;
  }
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Comm_free(&half);
  MPI_Finalize();
  return any_failed;
}
