// ops/pending_unary.hpp — public declarations of the unary ops added by the unary list's slice,
// to be folded into ops/ops.hpp (its "unary math" block) at merge. Their definitions come from
// the list (ops/kern/unary_list.inc, ops/unary_math.cpp).
#pragma once

#include "ops/ops.hpp"

namespace tg {
// sin(πx)/(πx), 1 at x = 0 (torch.sinc).
Tensor sinc(const Tensor& a, Site site = Site::here());
}  // namespace tg
