// autograd/trace_detail.hpp — internal: the calls from the tape and the engine into the study
// tools (anomaly.cpp, profiler.cpp, inspect.cpp). Not part of the public API.
#pragma once

#include "autograd/tape.hpp"

#include <vector>

namespace tg::detail {

// L2 norm of a floating tensor (accumulated in double); -1 for an undefined one.
double l2_norm(const Tensor& t);

// Anomaly mode: throw tg::Error naming op, node, site and the first non-finite element.
void anomaly_check_forward(const Node& n, const Tensor& out);
void anomaly_check_backward(const Node& n, const std::vector<Tensor>& in_grads);

// Profiler: a node was recorded (its extra holds flops and fwd_ns) / its backward took ns.
void profiler_on_record(Node& n);
void profiler_on_backward(Node& n, int64_t ns);

}  // namespace tg::detail
