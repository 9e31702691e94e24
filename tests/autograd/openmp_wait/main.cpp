// tests/autograd/openmp_wait/main.cpp — a program that calls tg::passive_openmp_wait(), run by
// ctest twice (tests/CMakeLists.txt): with no policy in the environment libgomp must have read
// "passive", with OMP_WAIT_POLICY=active the user's choice must win. It asks libgomp itself
// (omp_display_env), so a policy set too late for it (after its start-up) fails the test.
// libgomp shows its default wait as "PASSIVE" too, so passive is told by its spin count: 0 for
// passive, 300000 for the default (a spin of milliseconds), 3e10 for active.
// Usage: test_openmp_wait passive|active (what libgomp must report); exit 0 when it does.
#include "autograd/openmp_wait.hpp"

#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  if (argc != 2) {
    std::fprintf(stderr, "usage: test_openmp_wait passive|active\n");
    return 2;
  }
  // omp_display_env writes to stderr: capture it through a temporary file.
  char path[] = "/tmp/tg_openmp_wait_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return 2;
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  omp_display_env(1);  // verbose: GOMP_SPINCOUNT too
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  unlink(path);
  const std::string want =
      std::string(argv[1]) == "passive" ? "GOMP_SPINCOUNT = '0'" : "OMP_WAIT_POLICY = 'ACTIVE'";
  if (text.find(want) == std::string::npos) {
    std::fprintf(stderr, "libgomp does not report %s; it printed:\n%s", want.c_str(), text.c_str());
    return 1;
  }
  std::printf("libgomp reports %s\n", want.c_str());
  return 0;
}
