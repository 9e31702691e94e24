// ops/optim/cpu/optim.hpp — the CPU's mixed-dtype Adam step, which the kernel table's one-dtype
// adam_step cannot express: float32 master weights and state with a bfloat16 / float16 gradient
// (ops/optim/optim.cpp calls it; ops/optim/cpu/optim.cpp defines it). Internal to ops/optim/.
#pragma once

#include "ops/kern/kernel_codes.hpp"

#include <cstdint>

namespace tg::cpu {

// One Adam / AdamW step as cpu::adam_step with p, m, v (and vmax, or null) float32 and g of the
// reduced dtype gdt, read once as float32.
void adam_step_mixed(kern::DT gdt, float* p, const void* g, float* m, float* v, float* vmax,
                     int64_t n, double lr, double b1, double b2, double eps, double weight_decay,
                     bool decoupled, bool maximize, double bc1, double bc2);

}  // namespace tg::cpu
