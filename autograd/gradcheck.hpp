// autograd/gradcheck.hpp — numerical gradient checking (a library feature, not a test helper).
//
// tg::gradcheck compares the tape's gradients with float64 central differences, with PyTorch's
// defaults (eps 1e-6, atol 1e-5, rtol 1e-3): an element passes when
// |analytical - numerical| <= atol + rtol * |numerical|.
//  - Full mode builds the whole Jacobian: one backward per output element, two forward passes
//    per input element.
//  - Fast mode (large inputs) compares random projections u^T J v per input, seeded.
//  - Auto (default) picks full when inputs and output are small.
#pragma once

#include "autograd/tensor.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tg {

enum class GradcheckMode { Auto, Full, Fast };

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  GradcheckMode mode = GradcheckMode::Auto;
  int64_t full_limit = 4096;  // Auto uses full mode while input and output elements are below this
  uint64_t seed = 0;          // for fast mode's random projections
  int fast_projections = 2;   // fast mode: projection pairs per input
};

// The worst element of one input: in full mode an entry of the Jacobian d out[output_index] /
// d in[index]; in fast mode one random projection (index and output_index are -1).
struct GradcheckElement {
  std::vector<int64_t> index;
  int64_t output_index = -1;
  double analytical = 0, numerical = 0, abs_err = 0, rel_err = 0;
};

struct GradcheckInput {
  int input = 0;
  Shape shape;
  bool checked = false;  // false when the input does not require grad
  bool passed = true;
  int64_t failures = 0;  // elements outside tolerance
  GradcheckElement worst;
};

struct GradcheckReport {
  bool passed = true;
  bool fast_mode = false;
  Shape output_shape;
  std::vector<GradcheckInput> inputs;
  std::string str() const;  // a table, one line per input
  explicit operator bool() const { return passed; }
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// fn maps the inputs to one floating output; inputs that require grad must be float64 leaves.
GradcheckReport gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& opts = {});

}  // namespace tg
