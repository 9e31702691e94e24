// examples/common/guard.cpp — the blown-up loss and the non-finite weights checks (guard.hpp).
#include "common/guard.hpp"

#include "common/cli.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

namespace tgx {

std::string blown_up(const std::vector<double>& losses, size_t from, int64_t outcomes) {
  if (from >= losses.size()) return "";
  const double mean =
      std::accumulate(losses.begin() + static_cast<std::ptrdiff_t>(from), losses.end(), 0.0) /
      static_cast<double>(losses.size() - from);
  const double uniform = std::log(static_cast<double>(std::max<int64_t>(2, outcomes)));
  if (!(mean > kBlownUpFactor * uniform)) return "";
  return fmt::format(
      "training diverged: the mean loss of steps {}-{} is {:.4g}, more than {} x the {:.4f} of a "
      "uniform guess among {} outcomes",
      from + 1, losses.size(), mean, kBlownUpFactor, uniform, outcomes);
}

void require_finite_weights(const tg::nn::Module& m, const std::string& what,
                            const std::string& refusal) {
  for (const auto& [name, t] : m.state_dict()) {
    if (!tg::is_floating(t.dtype())) continue;
    const double s = tg::sum(tg::abs(t.to(tg::kCPU).to(tg::kFloat64))).item<double>();
    if (!std::isfinite(s))
      throw UserError(fmt::format(
          "{}: weight {} holds NaN or infinite values (a diverged run or a corrupt file); {}", what,
          name, refusal));
  }
}

}  // namespace tgx
