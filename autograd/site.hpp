// autograd/site.hpp — creation sites (the file:line of the user code that called an op) and the
// per-thread trace state that the study tools (inspect, anomaly mode, profiler) switch on.
//
// Every public op takes `Site site = Site::here()` as its last parameter: the default argument is
// evaluated at the caller, so __builtin_FILE/__builtin_LINE name the user's line. The op opens
// with `SiteScope scope(site);`, which sets the thread's current site only when none is set: the
// outermost call wins, so ops composed of ops (and modules calling ops) report the user's call.
// record() copies the current site into the node. C++ operators (a + b) cannot take default
// arguments: they pass Site() and inherit the enclosing site, or show "?".
// Cost when every tool is off: one thread-local load and compare at op entry and exit.
// Deliberately not here: the tools themselves (inspect.hpp, anomaly.hpp, profiler.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tg {

struct Site {
  const char* file = nullptr;  // as the compiler saw it (often an absolute path); null: unknown
  int line = 0;

  constexpr Site() = default;
  // The caller's file and line (when used as a default argument: the caller of that function).
  static constexpr Site here(const char* f = __builtin_FILE(), int l = __builtin_LINE()) {
    return Site(f, l, 0);
  }
  static constexpr Site at(const char* f, int l) { return Site(f, l, 0); }
  bool known() const { return file != nullptr; }
  std::string str() const;  // "basename.cpp:42", or "?" when unknown

 private:
  // Three arguments, so that a braced {0} or {"x", 1} never converts to a Site by accident
  // (x.sum({0}) must pick the dims overload).
  constexpr Site(const char* f, int l, int) : file(f), line(l) {}
};

// Bits of TraceState::modes: which study tools are on for this thread.
enum TraceMode : uint8_t { kTraceAnomaly = 1, kTraceInspect = 2, kTraceProfile = 4 };

namespace detail {
struct TraceState {
  Site site;          // the current (outermost) user call; unknown outside any op
  uint8_t modes = 0;  // TraceMode bits
  int64_t t0_ns = 0;  // entry time of the innermost op (profiler only)
};
inline thread_local TraceState g_trace;
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace detail

inline uint8_t trace_modes() { return detail::g_trace.modes; }
inline bool profiling() { return (detail::g_trace.modes & kTraceProfile) != 0; }
inline Site current_site() { return detail::g_trace.site; }

// Opened at every op entry (see the file comment). Also stamps the op's entry time while the
// profiler runs, so record() can time the forward.
class SiteScope {
 public:
  explicit SiteScope(Site s) {
    detail::TraceState& st = detail::g_trace;
    if (!st.site.file && s.file) {
      st.site = s;
      owns_ = true;
    }
    if (st.modes & kTraceProfile) {
      timed_ = true;
      prev_t0_ = st.t0_ns;
      st.t0_ns = detail::now_ns();
    }
  }
  ~SiteScope() {
    detail::TraceState& st = detail::g_trace;
    if (owns_) st.site = Site();
    if (timed_) st.t0_ns = prev_t0_;
  }
  SiteScope(const SiteScope&) = delete;
  SiteScope& operator=(const SiteScope&) = delete;

 private:
  bool owns_ = false, timed_ = false;
  int64_t prev_t0_ = 0;
};

}  // namespace tg
