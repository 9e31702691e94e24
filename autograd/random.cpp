// autograd/random.cpp — the seedable generator behind rand/randn/randint/dropout/shuffling: a
// 64-bit Mersenne twister with our own conversions (the same numbers on every platform), its
// serialised state for checkpoints.
#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>

namespace tg {

// ---- random generator ----
struct Generator::State {
  std::mt19937_64 eng;
  bool has_spare = false;
  double spare = 0;
};
Generator::Generator() : st_(std::make_unique<State>()) { set_seed(0); }
Generator::~Generator() = default;
void Generator::set_seed(uint64_t s) {
  seed_ = s;
  st_->eng.seed(s);
  st_->has_spare = false;
}
uint64_t Generator::next_u64() { return st_->eng(); }
void Generator::next_u64s(uint64_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = st_->eng();
}
double Generator::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
double Generator::normal() {
  if (st_->has_spare) {
    st_->has_spare = false;
    return st_->spare;
  }
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  double r = std::sqrt(-2.0 * std::log(u1));
  double th = 2.0 * M_PI * u2;
  st_->spare = r * std::sin(th);
  st_->has_spare = true;
  return r * std::cos(th);
}
std::string Generator::get_state() const {
  std::ostringstream os;
  os << seed_ << ' ' << st_->has_spare << ' ' << fmt::format("{:a}", st_->spare) << ' ' << st_->eng;
  return os.str();
}
void Generator::set_state(const std::string& s) {
  std::istringstream is(s);
  std::string spare;
  State st;
  uint64_t seed = 0;
  is >> seed >> st.has_spare >> spare >> st.eng;
  if (!is) throw Error("Generator::set_state: malformed generator state");
  st.spare = std::strtod(spare.c_str(), nullptr);
  seed_ = seed;
  *st_ = st;
}
Generator& default_generator() {
  static Generator g;
  return g;
}
void manual_seed(uint64_t seed) { default_generator().set_seed(seed); }
}  // namespace tg
