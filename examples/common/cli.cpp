// examples/common/cli.cpp — the argument parser and run_main (see cli.hpp).
#include "common/cli.hpp"

#include "nn/dist/dist.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <filesystem>
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <exception>
#include <iostream>
#include <sstream>
#include <thread>

namespace tgx {

ArgParser::ArgParser(std::string program, std::string about)
    : program_(std::move(program)), about_(std::move(about)) {}

ArgParser& ArgParser::option(const std::string& name, const std::string& default_value,
                             const std::string& help) {
  if (!specs_.count(name)) order_.push_back(name);
  specs_[name] = Spec{default_value, help, false};
  return *this;
}

ArgParser& ArgParser::flag(const std::string& name, const std::string& help) {
  if (!specs_.count(name)) order_.push_back(name);
  specs_[name] = Spec{"", help, true};
  return *this;
}

ArgParser& ArgParser::positionals(const std::string& what) {
  positional_what_ = what;
  return *this;
}

const ArgParser::Spec& ArgParser::spec(const std::string& name) const {
  auto it = specs_.find(name);
  if (it == specs_.end()) throw std::logic_error(program_ + ": option --" + name + " not declared");
  return it->second;
}

bool ArgParser::parse(int argc, const char* const* argv) {
  values_.clear();
  positional_.clear();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << usage();
      return false;
    }
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      if (positional_what_.empty() || (a.size() > 1 && a[0] == '-' && a != "-"))
        throw UserError("unexpected argument '" + a + "' (see --help)");
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = specs_.find(name);
    if (it == specs_.end()) throw UserError("unknown option --" + name + " (see --help)");
    if (it->second.is_flag) {
      if (has_value) throw UserError("option --" + name + " is a flag and takes no value");
      values_[name] = "1";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) throw UserError("option --" + name + " needs a value");
      value = argv[++i];
    }
    values_[name] = value;
  }
  return true;
}

std::string ArgParser::str(const std::string& name) const {
  const Spec& s = spec(name);
  auto it = values_.find(name);
  return it != values_.end() ? it->second : s.default_value;
}

int64_t ArgParser::integer(const std::string& name) const {
  std::string v = str(name);
  if (auto x = parse_int(v)) return *x;
  throw UserError("option --" + name + " must be a whole number, got '" + v + "'");
}

double ArgParser::number(const std::string& name) const {
  std::string v = str(name);
  if (auto x = parse_number(v)) return *x;
  throw UserError("option --" + name + " must be a finite number, got '" + v + "'");
}

std::optional<int64_t> parse_int(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || errno != 0 || *end != '\0') return std::nullopt;
  return x;
}

std::optional<double> parse_number(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || *end != '\0' || !std::isfinite(x)) return std::nullopt;
  return x;
}

bool ArgParser::flag(const std::string& name) const {
  spec(name);
  return values_.count(name) > 0;
}

bool ArgParser::given(const std::string& name) const {
  spec(name);
  return values_.count(name) > 0;
}

std::vector<std::string> ArgParser::given_names() const {
  std::vector<std::string> out;
  for (const auto& name : order_)
    if (values_.count(name)) out.push_back(name);
  return out;
}

std::string ArgParser::effective_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& name : order_)
    j[name] = specs_.at(name).is_flag ? (flag(name) ? "1" : "") : str(name);
  return j.dump();
}

std::string ArgParser::usage() const {
  std::ostringstream o;
  o << "usage: " << program_ << " [options]";
  if (!positional_what_.empty()) o << " " << positional_what_;
  o << "\n" << about_ << "\n\noptions:\n";
  for (const auto& name : order_) {
    const Spec& s = specs_.at(name);
    std::string left = "  --" + name + (s.is_flag ? "" : " VALUE");
    o << left;
    if (left.size() < 26)
      o << std::string(26 - left.size(), ' ');
    else
      o << "\n" << std::string(26, ' ');
    o << s.help;
    if (!s.is_flag && !s.default_value.empty()) o << " (default " << s.default_value << ")";
    o << "\n";
  }
  o << "  --help                  print this help\n";
  return o.str();
}

int run_main(const std::string& program, const std::function<int()>& body) {
  // In a data-parallel run (mpirun) an error on one rank stops every rank: the others would
  // otherwise wait in their next collective.
  auto fail = [&](const char* what, int code) {
    std::fflush(stdout);
    if (tg::dist::is_initialized() && tg::dist::world_size() > 1)
      tg::dist::abort(program + ": error: " + what, code);
    std::cerr << program << ": error: " << what << "\n";
    return code;
  };
  try {
    return body();
  } catch (const UserError& e) {
    return fail(e.what(), 2);
  } catch (const std::filesystem::filesystem_error& e) {
    // A folder or file the user named that cannot be made or written: a user error, said plainly.
    const std::string what = fmt::format(
        "cannot {} {}{}: {}", "use", e.path1().string(),
        e.path2().empty() ? "" : " (and " + e.path2().string() + ")", e.code().message());
    return fail(what.c_str(), 2);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
}

std::vector<std::string> split_list(const std::string& s, char sep, const std::string& what) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.empty()) throw UserError(what + ": empty item in '" + s + "'");
    out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

tg::Device device_option(const std::string& s) {
  tg::Device d;
  try {
    d = tg::parse_device(s);
  } catch (const tg::Error&) {
    throw UserError("--device " + s + ": expected cpu, cuda or cuda:N");
  }
  if (d.is_cuda() && d.index >= tg::cuda_device_count())
    throw UserError(
        "--device " + s + ": " +
        (tg::cuda_device_count() > 0
             ? "only " + std::to_string(tg::cuda_device_count()) + " CUDA device(s) are visible"
         : !tg::cuda_unavailable_reason().empty()
             ? "no CUDA device is available here: " + tg::cuda_unavailable_reason()
             : std::string("no CUDA device is available here (no GPU or no driver)")));
  return d;
}

void require_writable(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || ::access(dir.c_str(), W_OK) != 0 || (fs::exists(path) && fs::is_directory(path)))
    throw UserError(fmt::format("{} {}: cannot write there ({})", flag, path,
                                ec                       ? ec.message()
                                : fs::is_directory(path) ? "it is a folder"
                                                         : "the folder is not writable"));
}

int64_t int_option(const ArgParser& p, const std::string& name, int64_t lo, int64_t hi,
                   const std::string& note) {
  const int64_t v = p.integer(name);
  if (v < lo || v > hi) {
    const std::string range = hi == std::numeric_limits<int64_t>::max()
                                  ? fmt::format(">= {}", lo)
                                  : fmt::format("in [{}, {}]", lo, hi);
    throw UserError(fmt::format("--{} {}: must be {}{}", name, v, range,
                                note.empty() ? "" : " (" + note + ")"));
  }
  return v;
}

double number_option(const ArgParser& p, const std::string& name, double lo, double hi,
                     const std::string& note) {
  const double v = p.number(name);
  if (!(v >= lo && v <= hi)) {
    const std::string range =
        std::isinf(hi) ? fmt::format(">= {}", lo) : fmt::format("in [{}, {}]", lo, hi);
    throw UserError(fmt::format("--{} {}: must be {}{}", name, p.str(name), range,
                                note.empty() ? "" : " (" + note + ")"));
  }
  return v;
}

double positive_option(const ArgParser& p, const std::string& name, double hi) {
  const double v = p.number(name);
  if (!(v > 0 && v <= hi))
    throw UserError(fmt::format("--{} {}: must be in (0, {}]", name, p.str(name), hi));
  return v;
}

void refuse_unused(const ArgParser& p, const std::string& mode,
                   const std::vector<std::string>& used) {
  std::vector<std::string> unused;
  for (const std::string& name : p.given_names()) {
    const bool ok = name == "threads" || name == "quiet" ||
                    std::find(used.begin(), used.end(), name) != used.end();
    if (!ok) unused.push_back("--" + name);
  }
  if (!unused.empty())
    throw UserError(
        fmt::format("{} does not use {}: leave {} out ({} for training or another mode)", mode,
                    fmt::join(unused, ", "), unused.size() == 1 ? "it" : "them",
                    unused.size() == 1 ? "it is" : "they are"));
}

bool inference_elsewhere() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(var)) return parse_int(v).value_or(0) != 0;
  return false;
}

void require_same_options_on_every_rank(const ArgParser& p) {
  if (!tg::dist::is_initialized() || tg::dist::world_size() < 2) return;
  const std::vector<std::string> all = tg::dist::all_gather_object(p.effective_json());
  const nlohmann::json zero = nlohmann::json::parse(all[0]);
  std::vector<std::string> diffs;
  for (size_t r = 1; r < all.size(); ++r) {
    const nlohmann::json other = nlohmann::json::parse(all[r]);
    for (auto it = zero.begin(); it != zero.end(); ++it) {
      const std::string first = it.value().get<std::string>();
      const std::string theirs = other.value(it.key(), std::string("(none)"));
      if (first != theirs)
        diffs.push_back(fmt::format("--{}: rank 0 '{}', rank {} '{}'", it.key(), first, r, theirs));
    }
  }
  if (!diffs.empty())
    throw UserError(fmt::format(
        "the ranks of this data-parallel run were given different options ({}); every rank "
        "must run the same command",
        fmt::join(diffs, "; ")));
}

int threads_option(const ArgParser& p) {
  const int64_t n = int_option(p, "threads", 0, std::numeric_limits<int64_t>::max(),
                               "0: OMP_NUM_THREADS or all cores");
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (n > hw) {
    std::fprintf(stderr,
                 "warning: --threads %lld is more than the %lld hardware threads; using %lld\n",
                 static_cast<long long>(n), static_cast<long long>(hw), static_cast<long long>(hw));
    return static_cast<int>(hw);
  }
  return static_cast<int>(n);
}

}  // namespace tgx
