// ops/reduce/cpu/reduce_avx512.cpp — the column sums of ops/reduce/cpu/reduce_cols.hpp on AVX-512 batches (8
// doubles), in the AVX-512 table (ops/core/cpu/isa.hpp). Built with AVX-512 flags (ops/CMakeLists.txt)
// where the compiler has them; chosen only when the CPU reports AVX-512 F/CD/DQ/BW/VL. Same bits
// as the build's own (reduce_cols.hpp says why); their speed: bench/run.sh's variant rows.
#if defined(__AVX512F__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__)
#include "ops/reduce/cpu/reduce_cols.hpp"

#include "ops/core/cpu/isa.hpp"

namespace tg::cpu::isa::avx512 {
void fill_reduce(Table& t) {
  using A = xsimd::avx512bw;
  t.add_rows_f32 = cols::add_rows<A, float>;
  t.add_rows_f64 = cols::add_rows<A, double>;
}
}  // namespace tg::cpu::isa::avx512
#endif
