// tests/dist/plain/plain.cpp — run WITHOUT mpirun: tg::dist::launched_by_mpirun() is false in a
// plain process and stays false after init() (Open MPI's singleton start-up sets PMIX_RANK in the
// process's environment, which the function once read afresh). Exit 0 when stable, 1 otherwise.
#include "nn/dist/dist.hpp"

#include <cstdio>
#include <cstdlib>

int main() {
  const bool before = tg::dist::launched_by_mpirun();
  tg::dist::init();
  const bool after = tg::dist::launched_by_mpirun();
  const char* pmix = std::getenv("PMIX_RANK");
  std::printf("launched_by_mpirun: before init %d, after init %d (world size %d, PMIX_RANK %s)\n",
              before, after, tg::dist::world_size(), pmix ? pmix : "unset");
  tg::dist::finalize();
  return !before && !after ? 0 : 1;
}
