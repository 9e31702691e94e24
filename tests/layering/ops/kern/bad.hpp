// breaks the rule: ops/kern/ depends on nothing of the library
#include <cstdint>
#include "autograd/tensor.hpp"
