// cuda/philox.cuh — Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// the Random123 / cuRAND generator): a pure function of a 64-bit key and a 128-bit counter, so the
// host and the device compute the same bits and a dropout mask does not depend on the launch
// configuration. Plain C++ (a .cpp test may include it); the CUDA qualifiers appear only under
// nvcc. Deliberately not here: distributions other than the uniform of one 32-bit word.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TG_PHILOX_HD __host__ __device__ __forceinline__
#else
#define TG_PHILOX_HD inline
#endif

namespace tg::cuda {

struct Philox4x32 {
  uint32_t w[4];
};

// Philox-4x32-10: ten rounds, the key bumped by the Weyl constants between rounds.
TG_PHILOX_HD Philox4x32 philox4x32_10(Philox4x32 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr.w[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr.w[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = Philox4x32{{hi1 ^ ctr.w[1] ^ k0, lo1, hi0 ^ ctr.w[3] ^ k1, lo0}};
  }
  return ctr;
}

// The uniform in [0, 1) for a 64-bit counter under a 64-bit seed: key = (seed low 32, seed high
// 32), counter = (c low 32, c high 32, 0, 0), u = word 0 · 2⁻³² (exact in double).
TG_PHILOX_HD double philox_uniform(uint64_t seed, uint64_t c) {
  const Philox4x32 ctr{{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0u, 0u}};
  const Philox4x32 r =
      philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<double>(r.w[0]) * (1.0 / 4294967296.0);
}

}  // namespace tg::cuda

#undef TG_PHILOX_HD
