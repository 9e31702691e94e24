// ops/pending_h3.hpp — new public declarations from issue 40 (h3: reductions, softmax, losses,
// einsum), kept out of ops/ops.hpp until the merge so that adding them rebuilds only the files
// that use them. Each line names its place in ops/ops.hpp; the lead folds them in and deletes
// this header (and its includes: ops/softmax.cpp, tests/ops/test_softmax.cpp).
#pragma once

#include "ops/ops.hpp"

namespace tg {

// ops.hpp, beside softmax / log_softmax: softmax(−x, dim) (torch.nn.functional.softmin); a 0-dim
// input takes dim 0 or −1.
Tensor softmin(const Tensor& x, int64_t dim, Site site = Site::here());

}  // namespace tg
