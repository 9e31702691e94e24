// autograd/openmp_wait.hpp — tg::passive_openmp_wait(argv), for the first line of a program's
// main(): OpenMP's idle threads then sleep at once (OMP_WAIT_POLICY=passive) unless the user chose
// a policy.
// Why: tapegrad's OpenMP loops and OpenBLAS's own thread pool take turns on the same cores, and
// libgomp's default lets an idle worker spin for a while after every parallel region, holding the
// core that the next GEMM's threads (or another process) need; on a loaded machine small work
// then runs many times slower at the default thread count than at one thread (bench/sampling.sh).
// libgomp reads the variable once, in its constructor, before main(); a setenv that early does not
// hold either (glibc's own start-up resets the environment after the executable's preinit
// functions), so the program sets it and executes itself again. Deliberately not here: the
// work-size thresholds that keep tiny loops serial in any program (ops/core/detail.hpp,
// ops/attention/cpu/fused.cpp).
#pragma once

#include <unistd.h>

#include <cstdlib>

namespace tg {

// If OMP_WAIT_POLICY is unset: sets it to passive and re-executes this program with the same
// arguments (same pid, same environment otherwise). Returns when a policy is already set, or when
// the exec fails (the program then goes on with libgomp's default). Call it before anything is
// printed or any thread, file or MPI state is made: nothing of this process survives the exec.
inline void passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0) != 0) return;
  execv("/proc/self/exe", argv);
}

}  // namespace tg
