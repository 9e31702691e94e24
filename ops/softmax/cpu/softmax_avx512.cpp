// ops/softmax/cpu/softmax_avx512.cpp — the row softmax kernels of ops/softmax/cpu/softmax_rows.hpp on AVX-512
// batches (16 floats, 8 doubles), in the AVX-512 table (ops/core/cpu/isa.hpp). Built with AVX-512
// flags (ops/CMakeLists.txt) where the compiler has them; chosen only when the CPU reports
// AVX-512 F/CD/DQ/BW/VL. Their speed against the AVX2 rows: docs/cpu-kernels.md. Deliberately
// not here: the (outer, n, inner) forms (softmax.cpp).
#if defined(__AVX512F__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__)
#include "ops/softmax/cpu/softmax_rows.hpp"

#include "ops/core/cpu/isa.hpp"

namespace tg::cpu::isa::avx512 {
void fill_softmax(Table& t) {
  using A = xsimd::avx512bw;
  t.softmax_row_f32 = rows::softmax_row<A, float>;
  t.softmax_row_f64 = rows::softmax_row<A, double>;
  t.softmax_backward_row_f32 = rows::softmax_backward_row<A, float>;
  t.softmax_backward_row_f64 = rows::softmax_backward_row<A, double>;
}
}  // namespace tg::cpu::isa::avx512
#endif
