// breaks the rule: autograd/ never includes ops/
#include "ops/ops.hpp"
