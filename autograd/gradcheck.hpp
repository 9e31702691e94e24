// autograd/gradcheck.hpp — numerical gradient checking (a library feature, not a test helper).
//
// tg::gradcheck compares the tape's gradients with float64 central differences, with PyTorch's
// defaults (eps 1e-6, atol 1e-5, rtol 1e-3): an element passes when
// |analytical - numerical| <= atol + rtol * |numerical|.
//  - Full mode builds the whole Jacobian: one backward per output element, two forward passes
//    per input element.
//  - Fast mode (large inputs) compares random projections u^T J v per input, seeded.
//  - Auto (default) picks full when inputs and output are small.
// Kink detector (detect_kinks, on by default): a central difference that straddles a
// non-differentiable point (relu or abs at 0, a clamp bound, a max tie) measures the mean of the
// two one-sided slopes, not the derivative. For every perturbed element gradcheck compares the
// one-sided differences R = (f(x+h)-f(x))/h and L = (f(x)-f(x-h))/h; when they disagree by more
// than the tolerance (a smooth function's R - L is only f''·h), it evaluates f(x±2h) and calls
// the point a kink when the function is locally piecewise linear: the second difference on one
// side of the stencil vanishes while the central one does not (for a smooth function all three
// are f''·h²). A kink is reported (GradcheckReport::kinks, a WARN line in str()) and its
// Jacobian entries do not fail the check as long as the analytical value lies between L and R
// (a valid one-sided slope or subgradient); outside that range they still fail.
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
  bool detect_kinks = true;   // see the file comment; false: every entry is compared as is
};

// The worst element of one input: in full mode an entry of the Jacobian d out[output_index] /
// d in[index]; in fast mode one random projection (index and output_index are -1).
struct GradcheckElement {
  std::vector<int64_t> index;
  int64_t output_index = -1;
  double analytical = 0, numerical = 0, abs_err = 0, rel_err = 0;
};

// A central difference that straddled a non-differentiable point: input `input`, element `index`
// (empty in fast mode, where the kink lies along a random direction), output element
// output_index (-1 in fast mode), with the one-sided slopes left = (f(x)-f(x-h))/h and
// right = (f(x+h)-f(x))/h and the analytical value.
struct GradcheckKink {
  int input = 0;
  std::vector<int64_t> index;
  int64_t output_index = -1;
  double left = 0, right = 0, analytical = 0;
  // "kink near input 0 index (1,2) — numerical gradient unreliable here (one-sided slopes 0 and 1,
  // analytical 0)"
  std::string str() const;
};

struct GradcheckInput {
  int input = 0;
  Shape shape;
  bool checked = false;  // false when the input does not require grad
  bool passed = true;
  int64_t failures = 0;  // elements outside tolerance
  GradcheckElement worst;
  // Largest |analytical - numerical| over the compared entries, and the largest relative error
  // |analytical - numerical| / max(|numerical|, atol) (entries at kinks left out).
  double max_abs_err = 0, max_rel_err = 0;
  int64_t kinks = 0;  // entries at a kink (not compared when the analytical value is in range)
  // Compared entries whose numerical (f is NaN or inf at x ± eps) or analytical value is not
  // finite; str() explains them.
  int64_t nonfinite_numerical = 0, nonfinite_analytical = 0;
};

struct GradcheckReport {
  bool passed = true;
  bool fast_mode = false;
  Shape output_shape;
  std::vector<GradcheckInput> inputs;
  std::vector<GradcheckKink> kinks;  // at most kMaxKinks kept; GradcheckInput::kinks counts all
  static constexpr size_t kMaxKinks = 32;
  // Output elements that are NaN or inf at the input itself (then no gradient can be compared:
  // a mean over nothing, such as cross_entropy with every target ignored, is 0/0), the first one
  // (flat index) and its value.
  int64_t output_nonfinite = 0, first_nonfinite_output = -1;
  double first_nonfinite_value = 0;
  bool has_kinks() const { return !kinks.empty(); }
  // A table, one line per input, then one WARN line per kink and a NOTE line saying why
  // non-finite values were met (the output at the input, f at x ± eps, or the backward).
  std::string str() const;
  std::vector<std::string> notes() const;  // those NOTE lines, without the prefix
  explicit operator bool() const { return passed; }
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// fn maps the inputs to one floating output; inputs that require grad must be float64 leaves
// (a leaf view such as x.t().detach() is perturbed through its strides; one whose elements
// overlap, an expand, is refused). The output may be a view.
GradcheckReport gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& opts = {});

// Second order (PyTorch's gradgradcheck): the first-order gradients of fn with respect to every
// input that requires grad, for the output gradient grad_output (random normal, seeded by
// opts.seed, when undefined), are computed with create_graph and checked by gradcheck as a
// function of the inputs and of grad_output: the tape's second derivatives against central
// differences of the first. Defined in ops/functional/functional.cpp (it joins gradients with tg::cat).
GradcheckReport gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const Tensor& grad_output = Tensor(),
                              const GradcheckOptions& opts = {});

}  // namespace tg
