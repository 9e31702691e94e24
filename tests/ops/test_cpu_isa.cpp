// tests/ops/test_cpu_isa.cpp — the instruction-set table's choice (ops/core/cpu/isa.cpp): families
// switched one at a time name themselves in simd_kernels(), the attention's products follow their
// family, reset_simd_kernels() returns to the per-CPU choice, kernel_choice() names the CPU model
// and how each family was chosen, and the result of an op does not depend on the reduce family's
// variant (its two kernels give the same bits).
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cstring>
#include <string>

using namespace tg;
using cpu::KernelFamily;

namespace {
struct Restore {
  ~Restore() { cpu::reset_simd_kernels(); }
};
}  // namespace

TEST_CASE("cpu kernel families switch one at a time and reset to the per-CPU choice",
          "[cpu][isa]") {
  Restore restore;
  const std::string chosen = cpu::simd_kernels();
  const std::string choice = cpu::kernel_choice();
  INFO(choice);
  CHECK(choice.rfind(chosen + " on ", 0) == 0);  // starts with the table's name
  CHECK(choice.find(" family ") != std::string::npos);
  REQUIRE(cpu::set_simd_kernels(false));
  const std::string native = cpu::simd_kernels();
  CHECK(native != "avx512");
  CHECK(!cpu::simd_avx512());
  CHECK(!cpu::attention_packed_products());
  if (!cpu::set_simd_kernels(true)) {
    WARN("no AVX-512 in this build or CPU: only the build's own kernels exist here");
    CHECK(choice.find("no AVX-512") != std::string::npos);
    CHECK(!cpu::set_kernel_variant(KernelFamily::Unary, true));
    return;
  }
  CHECK(std::string(cpu::simd_kernels()) == "avx512");
  CHECK(cpu::attention_packed_products());
  REQUIRE(cpu::set_kernel_variant(KernelFamily::Attention, false));
  CHECK(std::string(cpu::simd_kernels()) == "avx512 (attention: " + native + ")");
  CHECK(!cpu::attention_packed_products());
  REQUIRE(cpu::set_kernel_variant(KernelFamily::Softmax, false));
  CHECK(std::string(cpu::simd_kernels()) ==
        "avx512 (softmax: " + native + ", attention: " + native + ")");
  REQUIRE(cpu::set_kernel_variant(KernelFamily::Attention, true));
  CHECK(cpu::attention_packed_products());
  CHECK(cpu::simd_avx512());
  cpu::reset_simd_kernels();
  CHECK(std::string(cpu::simd_kernels()) == chosen);
}

TEST_CASE("sums and means come out with the same bits on either reduce variant", "[cpu][isa]") {
  Restore restore;
  manual_seed(3);
  Tensor x = randn({300, 77}), y = randn({5, 129, 40}, kFloat64);
  auto run = [&] {
    std::vector<Tensor> r{sum(x, {0}), mean(y, {1}), var(y, {0, 1}), mean(x, {0}, true)};
    return r;
  };
  cpu::set_kernel_variant(KernelFamily::Reduce, false);
  const std::vector<Tensor> a = run();
  if (!cpu::set_kernel_variant(KernelFamily::Reduce, true)) {
    WARN("no AVX-512 in this build or CPU");
    return;
  }
  const std::vector<Tensor> b = run();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("output " << i);
    REQUIRE(a[i].numel() == b[i].numel());
    CHECK(std::memcmp(a[i].data_ptr(), b[i].data_ptr(), a[i].numel() * dtype_size(a[i].dtype())) ==
          0);
  }
}
