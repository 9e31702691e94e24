// breaks the rule twice: nn/ reaches kernels only through tensor-level ops
#include "ops/ops.hpp"
#include "ops/core/kernels.hpp"
  #  include "ops/core/cpu/kernels.hpp"
