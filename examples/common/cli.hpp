// examples/common/cli.hpp — what every example program shares at its edges: a small
// command-line parser with typed getters and --help, the error type for bad user input, and the
// main() wrapper that turns every exception into one clear message and a non-zero exit.
//
// Not here: anything about models or data. Options are "--name value" or "--name=value";
// flags are "--name". Unknown options, missing values and malformed numbers are UsageErrors.
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tgx {

// Bad input from the user (arguments, data files, checkpoints): printed as
// "<program>: error: <message>" with exit code 2. Other exceptions (tg::Error, std::exception)
// exit with 1 and the same kind of message. Nothing escapes as a crash.
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ArgParser {
 public:
  ArgParser(std::string program, std::string about);

  // Declares an option with a default value (shown in --help); "" means "no default".
  ArgParser& option(const std::string& name, const std::string& default_value,
                    const std::string& help);
  ArgParser& flag(const std::string& name, const std::string& help);
  // Allows positional arguments (otherwise they are an error); `what` names them in --help.
  ArgParser& positionals(const std::string& what);

  // Parses argv. Returns false when --help/-h was given (usage is printed to stdout); throws
  // UserError naming the option for anything wrong.
  bool parse(int argc, const char* const* argv);

  std::string str(const std::string& name) const;
  int64_t integer(const std::string& name) const;  // UserError unless a whole integer
  double number(const std::string& name) const;    // UserError unless a finite number
  bool flag(const std::string& name) const;        // true when the flag was given
  bool given(const std::string& name) const;       // true when the option or flag was given
  const std::vector<std::string>& positional() const { return positional_; }
  // The options and flags given on the command line, in declaration order.
  std::vector<std::string> given_names() const;
  // Every declared option with the value this run uses (given or default; flags "1" or ""), as
  // one JSON object: what the ranks of a data-parallel run compare.
  std::string effective_json() const;
  std::string usage() const;
  const std::string& program() const { return program_; }

 private:
  struct Spec {
    std::string default_value, help;
    bool is_flag = false;
  };
  const Spec& spec(const std::string& name) const;
  std::string program_, about_, positional_what_;
  std::vector<std::string> order_;
  std::map<std::string, Spec> specs_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// Runs body(); prints "<program>: error: ..." to stderr for any exception and returns 2 for a
// UserError, 1 otherwise; returns body()'s result when it succeeds.
int run_main(const std::string& program, const std::function<int()>& body);

// The whole string as a base-10 integer / a finite number; nullopt when it is anything else.
std::optional<int64_t> parse_int(const std::string& s);
std::optional<double> parse_number(const std::string& s);

// --device: "cpu", "cuda" or "cuda:N"; UserError for anything else or a CUDA device this
// machine or build does not have.
tg::Device device_option(const std::string& s);

// Splits "a,b,c" (no empty parts allowed; `what` names the option in the error).
std::vector<std::string> split_list(const std::string& s, char sep, const std::string& what);

// p.integer(name) / p.number(name), refused unless lo <= value <= hi, with a message naming the
// allowed range ("--patience -1: must be >= 0 (0: off)"); `note` says what special values mean.
int64_t int_option(const ArgParser& p, const std::string& name, int64_t lo,
                   int64_t hi = std::numeric_limits<int64_t>::max(), const std::string& note = "");
double number_option(const ArgParser& p, const std::string& name, double lo,
                     double hi = std::numeric_limits<double>::infinity(),
                     const std::string& note = "");
// p.number(name), refused unless 0 < value <= hi ("--lr 0: must be in (0, 10]").
double positive_option(const ArgParser& p, const std::string& name, double hi);
// --threads: 0 means OMP_NUM_THREADS or every hardware thread; more than the hardware threads is
// capped to them with a warning on stderr (oversubscribed threads only slow down). Returns the
// count to pass to tg::set_num_threads, or 0 to keep the default.
int threads_option(const ArgParser& p);

// A mode (--predict, --sample, ...) that reads only some options: UserError naming every given
// option outside `used` and the mode, instead of ignoring them silently. --help, --threads and
// --quiet are always allowed.
void refuse_unused(const ArgParser& p, const std::string& mode,
                   const std::vector<std::string>& used);
// Under mpirun -np N (before or without tg::dist::init): true on ranks 1..N-1. Inference modes
// run on rank 0 alone and the other ranks return at once, so a prediction prints once.
bool inference_elsewhere();
// In a data-parallel run (tg::dist initialised, N > 1): every rank's effective options are
// gathered and compared with rank 0's; any difference is a UserError on every rank naming each
// differing option with rank 0's value and the other rank's. Collective: call it on every rank.
void require_same_options_on_every_rank(const ArgParser& p);

// UserError naming `flag` unless a file can be created at `path` (its folder exists or can be
// made, and is writable): checked before the work, not after it.
void require_writable(const std::string& path, const std::string& flag);

}  // namespace tgx
