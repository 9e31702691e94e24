// ops/unary/cpu/unary_avx512.cpp — the float32 unary kernels of ops/unary/cpu/rows.hpp (exp, log, tanh,
// sigmoid, both GELUs, forward and backward) on AVX-512 batches (16 floats), in the AVX-512 table
// (ops/core/cpu/isa.hpp). Built with AVX-512 flags (ops/CMakeLists.txt) where the compiler has them;
// chosen only when the CPU reports AVX-512 F/CD/DQ/BW/VL. Their speed: bench/ (FILTER=unary) and
// docs/cpu-kernels.md. Deliberately not here: the ops these leave to unary.cpp's xtensor kernels.
#if defined(__AVX512F__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__)
#include "ops/core/cpu/isa.hpp"
#include "ops/unary/cpu/rows.hpp"

namespace tg::cpu::isa::avx512 {
void fill_unary(Table& t) {
  using A = xsimd::avx512bw;
  t.unary_f32 = urows::unary_f32<A>;
  t.unary_backward_f32 = urows::unary_backward_f32<A>;
}
}  // namespace tg::cpu::isa::avx512
#endif
