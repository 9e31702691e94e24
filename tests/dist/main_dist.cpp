// tests/dist/main_dist.cpp — the Catch2 main of the multi-process suite: joins the mpirun job,
// runs the same test cases in the same order on every rank (their collectives must match), and
// keeps rank > 0's report short. Run as `mpirun -np 2 test_dist` (ctest does, see CMakeLists).
#include "run_catch.hpp"

#include "nn/dist/dist.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  if (!tg::dist::built_with_mpi()) {
    std::printf("test_dist: this build has no MPI (apt-get install libopenmpi-dev); skipped\n");
    return 77;
  }
  tg::dist::init();
  const int failed = tg_test::run_catch(argc, argv);
  // Every rank's verdict decides: a failure on one rank fails the job on all.
  tg::Tensor f = tg::tensor(std::vector<int64_t>{failed});
  tg::dist::all_reduce(f, tg::dist::ReduceOp::Max);
  tg::dist::finalize();
  return f.item<int64_t>() > 0 ? 1 : 0;
}
