// breaks the rule: cuda/ reads only ops/kern/
#include "ops/kern/kernel_codes.hpp"
#include "ops/ops.hpp"
