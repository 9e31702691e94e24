// tools/gradcheck/cases.hpp — what the `gradcheck` tool can check: the command-line options that
// describe one case (CaseArgs), the registry of --op builders (one per op family of ops/ops.hpp,
// plus attention, MultiheadAttention and the Transformer layers), the built-in --all table, and
// the parser shared by the command line and that table.
//
// A built case is a float64 function of float64 leaves (tg::GradcheckFn) with a name per input
// ("q", "in_proj_weight", ...). Random inputs come from tg::manual_seed(seed): the same seed
// gives the same inputs. `broken_square` is registered here only, for the tool and its tests: a
// deliberately wrong backward, to see a failure.
// Deliberately not here: running gradcheck and printing the table (main.cpp).
#pragma once

#include "autograd/gradcheck.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

// A mistake on the command line: the tool prints "gradcheck: error: <message>" and exits 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& m) : std::runtime_error(m) {}
};

// Options describing one case. Sizes use the project's vocabulary: B batch, T query length,
// S key length, C = E embed dim, NH heads, hs head size, V vocab.
struct CaseArgs {
  std::string op;
  std::string label;  // how the case is named in the table (default: op and its options)
  std::optional<tg::Shape> shape, shape2;
  std::vector<double> values;  // explicit input values (elementwise ops, broken_square)
  int64_t batch = 2, len = 4, src_len = -1, embed = 8, heads = 2, head_size = 3, ff = 12, vocab = 7;
  // attention masks
  bool causal = false, bottom_right = false, bool_mask = false, additive = false;
  bool pad_bool = false;  // sdpa: key padding as a (B, S) bool mask instead of lengths
  std::optional<std::pair<int64_t, int64_t>> local;
  int64_t blocked = 0, look_back = 0;
  bool blocked_causal = false;
  std::vector<int64_t> padding, mem_padding;  // valid key lengths per batch element
  double dropout = 0;
  // reductions, softmax, shape ops
  std::vector<int64_t> dims;
  bool keepdim = false;
  int64_t dim = -1, correction = 1;
  // cross_entropy, embedding, layers
  std::string reduction = "mean";
  double smoothing = 0;
  std::optional<int64_t> ignore_index, padding_idx;
  bool no_bias = false, norm_first = false;
  std::string activation = "relu";
  // scatter_reduce: the reduce mode (default sum), include_self = false
  std::string reduce;
  bool exclude_self = false;
  std::vector<std::string> given;  // the options as given, for the default label
};

// Parses the case options in tokens[i...] it knows; returns false for a token it does not know
// (the caller handles it). Throws UsageError for a bad value.
bool parse_case_option(const std::vector<std::string>& tokens, size_t& i, CaseArgs& a);
// Parses a whole case description ("--op mha --len 7 ..."): every token must be a case option.
CaseArgs parse_case(const std::string& args);
std::string case_label(const CaseArgs& a);

struct BuiltCase {
  tg::GradcheckFn fn;
  std::vector<tg::Tensor> inputs;
  std::vector<std::string> names;  // one per input
  std::shared_ptr<void> keep;      // a module the function uses
};

struct OpInfo {
  std::string name;
  std::string help;  // the options it reads
  std::function<BuiltCase(const CaseArgs&)> build;
  // The public ops (ops/ops.hpp, ops/attention/attention.hpp) its function differentiates; empty:
  // {name}. `gradcheck --list` prints those the --all table reaches, and tests/tools checks that
  // they are every op docs/ops.md marks differentiable.
  std::vector<std::string> covers = {};
};
// The public ops the --all table differentiates (the union of its cases' OpInfo::covers).
std::vector<std::string> all_covered_ops();
const std::vector<OpInfo>& op_registry();
// Seeds the generator and builds the case; UsageError for an unknown op or bad sizes.
BuiltCase build_case(const CaseArgs& a, uint64_t seed);

// The --all table: a short name and the case options, covering every op family.
struct TableCase {
  std::string name, args;
};
const std::vector<TableCase>& all_cases();

}  // namespace tgc
