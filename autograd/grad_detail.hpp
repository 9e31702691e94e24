// autograd/grad_detail.hpp — internal (not installed): tg::grad's variant for partial derivatives,
// used by backward closures that differentiate a recomputed piece of graph under create_graph
// (ops/attention/create_graph.cpp, autograd/activation_checkpoint.cpp), and the tape position.
#pragma once

#include "autograd/tape.hpp"

#include <vector>

namespace tg::detail {
// tg::grad(outputs, inputs, grad_outputs) that does not walk past the inputs: a non-leaf input's
// node gets its gradient captured and is not run, so the results are the partial derivatives with
// respect to the inputs as independent variables (an input computed from another one does not
// pass its gradient on), and nothing upstream of them runs. Unused inputs: undefined.
std::vector<Tensor> grad_stop_at_inputs(const std::vector<Tensor>& outputs,
                                        const std::vector<Tensor>& inputs,
                                        const std::vector<Tensor>& grad_outputs, bool create_graph);
// The same with the inputs given as edges (a node's output, or a leaf): the gradient reaching each.
std::vector<Tensor> grad_to_edges(const std::vector<Tensor>& outputs,
                                  const std::vector<Edge>& inputs,
                                  const std::vector<Tensor>& grad_outputs, bool create_graph);
// record() with the node's edges given (tg::checkpoint: what fn read from outside, found on the
// tape), one gradient per edge from fn.
void record_edges(const char* op, Tensor& out, std::vector<Edge> edges, const RecordInfo& info,
                  BackwardFn fn);
// After an in-place write into x, whose history becomes n (the node that computed the new
// values): when n saved a tensor on x's storage before the write, its backward is bound to
// refuse (the version check), and its closure may hold x itself (a saved input is kept as is:
// x.div_(x)), which through x's new history would own n. That closure is replaced by one that
// keeps only the storage the version check reads, so the cycle never forms.
void release_if_stale(Node& n, const Tensor& x);
// The tape position the next recorded node will take (Node::seq): nodes with a smaller seq were
// recorded before (tg::checkpoint tells its own nodes from the ones outside by it).
uint64_t tape_position();
}  // namespace tg::detail
