// breaks the rule twice: nn/ reaches kernels only through tensor-level ops
#include "ops/ops.hpp"
#include "ops/kernels.hpp"
  #  include "ops/cpu/kernels.hpp"
