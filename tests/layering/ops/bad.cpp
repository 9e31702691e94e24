// breaks the rule: ops/ never includes nn/
#include <nn/module.hpp>
