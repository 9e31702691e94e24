// ops/matmul/matmul.cpp — matmul (PyTorch's rank rules and batch broadcasting), mm, bmm and linear,
// forward and backward side by side, all on one GEMM over raw pointers (cpu::gemm, cuBLAS on CUDA).
//
// Every product is a batch of row-major gemms C[i] (M, N) = A[i] (M, K) · B[i] (K, N): the plan
// (ops/matmul/plan.hpp). Transposes are never materialised: backward passes transpose flags with
// the original leading dimensions (dA = dC·Bᵀ, dB = Aᵀ·dC), and linear multiplies by Wᵀ the same
// way. An operand that is a transposed view of row-major matrices (x.t(), k.transpose(-2, -1):
// strides (..., 1, R)) goes to BLAS as it lies, with the transpose flag set; any other strided
// operand is made contiguous first.
// Broadcast operands accumulate their gradient with beta = 1 into one zeroed buffer.
// bfloat16 / float16 operands run the reduced GEMM (ops/matmul/cpu/reduced_gemm.hpp: oneDNN or
// the float32 fallback), every product rounded once: a broadcast operand's gradient sums its
// batches in float32 first, and linear's bias is added before the rounding. Under autocast the
// listed entries cast their operands first (ops/autocast/autocast.hpp). A float32 operand with a
// bfloat16 / float16 one (weight-only reduced precision) computes in float32
// (ops/matmul/mixed.hpp). Deliberately not here: the GEMM kernels (ops/matmul/cpu/, cuda/blas.cu),
// integer dtypes.
#include "autograd/convert.hpp"
#include "ops/autocast/autocast.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"
#include "ops/matmul/cpu/reduced_gemm.hpp"
#include "ops/matmul/mixed.hpp"
#include "ops/matmul/plan.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

namespace tg {
using namespace detail;
using namespace matmul_plan;

namespace {

// ---- GEMM ----
template <typename T>
constexpr bool kReduced = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

// calls f(T{}) with T = float, double, bfloat16 or float16.
template <typename F>
decltype(auto) dispatch_gemm(DType t, const char* op, F&& f) {
  if (t == kBFloat16) return f(bfloat16{});
  if (t == kFloat16) return f(float16{});
  return dispatch_float(t, op, std::forward<F>(f));
}

// The reduced-type product on the CPU (cpu::gemm_reduced): C has dtype c (T's, or float32 for
// a sum the caller rounds once), bias (N) is added to every row before the rounding.
template <typename T>
void gemm_reduced(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                  const T* B, int64_t ldb, bool acc, void* C, DType c, int64_t ldc,
                  const T* bias = nullptr) {
  cpu::ReducedGemm g;
  g.ab = dtype_of<T>::value;
  g.c = c;
  g.ta = ta, g.tb = tb, g.M = M, g.N = N, g.K = K;
  g.A = A, g.lda = lda, g.B = B, g.ldb = ldb, g.C = C, g.ldc = ldc;
  g.bias = bias;
  g.accumulate = acc;
  cpu::gemm_reduced(g, "matmul");
}

// C (M, N) = op(A) · op(B) (+ C when acc), row-major; lda/ldb/ldc are the row lengths of A, B
// and C as stored (op = transpose when ta/tb). On the CPU: cpu::gemm (xt::blas::gemm over the
// buffers), or the reduced GEMM; on a CUDA device: one cuBLAS call (cuda/blas.cu), same arguments.
template <typename T>
void gemm(Device dev, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
          const T* B, int64_t ldb, bool acc, T* C, int64_t ldc) {
  if (dev.is_cuda()) {
    kernels("matmul", dev)
        .gemm(cdt(dtype_of<T>::value), ta, tb, M, N, K, 1.0, A, lda, 0, B, ldb, 0, acc ? 1.0 : 0.0,
              C, ldc, 0, 1);
    return;
  }
  if constexpr (kReduced<T>) {
    gemm_reduced(ta, tb, M, N, K, A, lda, B, ldb, acc, C, dtype_of<T>::value, ldc);
  } else {
    for (int64_t v : {M, N, K, lda, ldb, ldc}) check_blas_int(v);
    cpu::gemm<T>(ta, tb, M, N, K, T(1), A, lda, B, ldb, acc ? T(1) : T(0), C, ldc);
  }
}

// Typed data pointer on any device (dtype checked by the caller's dispatch).
template <typename T>
T* dptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_float(a, op, "lhs", true);
  check_float(b, op, "rhs", true);
  check_same_device(a, b, op, "lhs", "rhs");
  if (!matmul_mixed::is_mixed(a.dtype(), b.dtype())) check_same_dtype(a, b, op, "lhs", "rhs");
}

// On CUDA, a plan whose matrices all sit at regular strides (no broadcast batch dims) runs as
// one strided-batched GEMM; false when it does not apply.
template <typename T>
bool cuda_batched(const Plan& p, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A,
                  int64_t lda, int64_t sA, const T* B, int64_t ldb, int64_t sB, T* C, int64_t ldc,
                  int64_t sC) {
  if (!p.dev.is_cuda() || !p.off_a.empty() || !p.off_b.empty() || p.batch == 1) return false;
  kernels("matmul", p.dev)
      .gemm(cdt(dtype_of<T>::value), ta, tb, M, N, K, 1.0, A, lda, sA, B, ldb, sB, 0.0, C, ldc, sC,
            p.batch);
  return true;
}

// C = A·B for every gemm of the plan.
template <typename T>
void matmul_forward(const Plan& p, const T* A, const T* B, T* C) {
  const int64_t M = p.M, N = p.N, K = p.K;
  const int64_t lda = p.lda(), ldb = p.ldb();
  if (cuda_batched(p, p.ta, p.tb, M, N, K, A, lda, M * K, B, ldb, K * N, C, N, M * N)) return;
  for (int64_t i = 0; i < p.batch; ++i)
    gemm(p.dev, p.ta, p.tb, p.M, p.N, p.K, A + p.a_offset(i), lda, B + p.b_offset(i), ldb, false,
         C + i * p.M * p.N, p.N);
}
// A reduced-type gradient shared by several gemms (n elements at out): the gemm(i, float* acc)
// calls sum into one float32 buffer, rounded once into out. False where this does not apply
// (float32 / float64, an unshared gradient, CUDA: there each gemm accumulates in place).
template <typename T, typename G>
bool reduced_sum_of_gemms(const Plan& p, bool shared, T* out, int64_t n, G&& gemm_i) {
  if constexpr (kReduced<T>) {
    if (!shared || p.dev.is_cuda()) return false;
    std::vector<float> acc(static_cast<size_t>(n), 0.0f);
    for (int64_t i = 0; i < p.batch; ++i) gemm_i(i, acc.data());
    convert::from_float(dtype_of<T>::value, out, acc.data(), n);
    return true;
  } else {
    return false;
  }
}
// dA (n_a elements) = dC·Bᵀ, summed over the gemms that share an A matrix.
template <typename T>
void matmul_backward_a(const Plan& p, const T* dC, const T* B, T* dA, int64_t n_a) {
  const bool acc = p.bcast_a;  // dA was zeroed when it accumulates
  const int64_t M = p.M, N = p.N, K = p.K;
  // op(B)ᵀ: B as stored when it is stored transposed.
  const bool tb = !p.tb;
  const int64_t ldb = p.ldb();
  if (cuda_batched(p, false, tb, M, K, N, dC, N, M * N, B, ldb, K * N, dA, K, M * K)) return;
  if (reduced_sum_of_gemms(p, acc, dA, n_a, [&](int64_t i, float* f) {
        gemm_reduced(false, tb, M, K, N, dC + i * M * N, N, B + p.b_offset(i), ldb, true,
                     f + p.a_offset(i), kFloat32, K);
      }))
    return;
  for (int64_t i = 0; i < p.batch; ++i)
    gemm(p.dev, false, tb, p.M, p.K, p.N, dC + i * p.M * p.N, p.N, B + p.b_offset(i), ldb, acc,
         dA + p.a_offset(i), p.K);
}
// dB (n_b elements) = Aᵀ·dC, summed over the gemms that share a B matrix.
template <typename T>
void matmul_backward_b(const Plan& p, const T* A, const T* dC, T* dB, int64_t n_b) {
  const bool acc = p.bcast_b;
  const int64_t M = p.M, N = p.N, K = p.K;
  const bool ta = !p.ta;  // op(A)ᵀ
  const int64_t lda = p.lda();
  if (cuda_batched(p, ta, false, K, N, M, A, lda, M * K, dC, N, M * N, dB, N, K * N)) return;
  if (reduced_sum_of_gemms(p, acc, dB, n_b, [&](int64_t i, float* f) {
        gemm_reduced(ta, false, K, N, M, A + p.a_offset(i), lda, dC + i * M * N, N, true,
                     f + p.b_offset(i), kFloat32, N);
      }))
    return;
  for (int64_t i = 0; i < p.batch; ++i)
    gemm(p.dev, ta, false, p.K, p.N, p.M, A + p.a_offset(i), lda, dC + i * p.M * p.N, p.N, acc,
         dB + p.b_offset(i), p.N);
}

Tensor matmul_impl(const char* op, const Tensor& a_in, const Tensor& b_in) {
  const bool ta = stored_transposed(a_in), tb = stored_transposed(b_in);
  const Tensor a = ta ? a_in : contig(a_in);
  const Tensor b = tb ? b_in : contig(b_in);
  if (a.dtype() != b.dtype()) return matmul_mixed::matmul(op, a, b, ta, tb);  // checked: mixed
  Plan p = make_plan(op, a, b, ta, tb);
  Tensor out = empty_gemm(p) ? zeros(p.out_shape, a.dtype(), p.dev)
                             : Tensor::empty(p.out_shape, a.dtype(), p.dev);
  if (!empty_gemm(p)) {
    dispatch_gemm(a.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      matmul_forward(p, dptr<T>(a), dptr<T>(b), dptr<T>(out));
    });
  }
  if (needs_record({&a, &b})) {
    const bool ga = a.requires_grad(), gb = b.requires_grad();
    Shape shape_a = a.shape(), shape_b = b.shape();
    // Cost model: 2·M·N·K per batch forward, the same again for each input gradient.
    const double mnk2 = 2.0 * static_cast<double>(p.batch) * p.M * p.N * p.K;
    RecordInfo info = RecordInfo().flops(mnk2, mnk2 * (ga + gb));
    Saved ha = gb ? info.save(a) : Saved();  // dB reads A
    Saved hb = ga ? info.save(b) : Saved();  // dA reads B
    record(op, out, {a, b}, info.differentiable(),
           [p = std::move(p), ha, hb, shape_a, shape_b, ga,
            gb](const Tensor& dC) -> std::vector<Tensor> {
             const Tensor sa = ha.get(), sb = hb.get();
             if (creating_graph()) return matmul_grads(dC, sa, sb, shape_a, shape_b, ga, gb);
             const bool skip = empty_gemm(p);
             Tensor dA, dB;
             if (ga)
               dA = (skip || p.bcast_a) ? zeros(shape_a, dC.dtype(), p.dev)
                                        : Tensor::empty(shape_a, dC.dtype(), p.dev);
             if (gb)
               dB = (skip || p.bcast_b) ? zeros(shape_b, dC.dtype(), p.dev)
                                        : Tensor::empty(shape_b, dC.dtype(), p.dev);
             if (skip) return {dA, dB};
             dispatch_gemm(dC.dtype(), "matmul backward", [&](auto tag) {
               using T = decltype(tag);
               if (ga) matmul_backward_a(p, dptr<T>(dC), dptr<T>(sb), dptr<T>(dA), dA.numel());
               if (gb) matmul_backward_b(p, dptr<T>(sa), dptr<T>(dC), dptr<T>(dB), dB.numel());
             });
             return {dA, dB};
           });
  }
  return out;
}

// ---- linear ----
void check_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  check_float(x, "linear", "x", true);
  check_float(w, "linear", "weight", true);
  check_same_device(x, w, "linear", "x", "weight");
  check_same_device(bias, w, "linear", "bias", "weight");
  const bool mixed = matmul_mixed::is_mixed(x.dtype(), w.dtype());
  if (!mixed) check_same_dtype(x, w, "linear", "x", "weight");
  std::string bias_str = bias.defined() ? shape_str(bias.shape()) : "undefined";
  auto shapes = [&] {
    return fmt::format("x {}, weight {}, bias {}", shape_str(x.shape()), shape_str(w.shape()),
                       bias_str);
  };
  if (x.dim() == 0)
    throw Error(fmt::format("linear: x must be (..., Cin), got a 0-dim tensor ({})", shapes()));
  if (w.dim() != 2)
    throw Error(fmt::format("linear: weight must be 2-D (Cout, Cin) ({})", shapes()));
  if (x.size(-1) != w.size(1))
    throw Error(fmt::format("linear: x has {} input features but weight expects Cin = {} ({})",
                            x.size(-1), w.size(1), shapes()));
  if (bias.defined()) {
    check_float(bias, "linear", "bias", true);
    if (!mixed || (bias.dtype() != x.dtype() && bias.dtype() != w.dtype()))
      check_same_dtype(bias, w, "linear", "bias", "weight");
    if (bias.shape() != Shape{w.size(0)})
      throw Error(fmt::format("linear: bias must be (Cout) = ({}) ({})", w.size(0), shapes()));
  }
}

// y (N, Cout) = x (N, Cin) · Wᵀ (+ b broadcast over rows).
// Rows of y (N, Cout) set to b (Cout): the start of linear's forward.
template <typename T>
void fill_rows(Device dev, T* y, const T* b, int64_t N, int64_t Cout) {
  if (!dev.is_cuda()) {
    for (int64_t r = 0; r < N; ++r) std::memcpy(y + r * Cout, b, Cout * sizeof(T));
    return;
  }
  kern::Strided st = make_strided({N, Cout}, {});
  set_operand(st, 1, {0, 1}, 0);
  kernels("linear", dev).strided_copy(cdt(dtype_of<T>::value), y, b, st);
}
template <typename T>
void linear_forward(Device dev, const T* x, const T* w, const T* b, T* y, int64_t N, int64_t Cin,
                    int64_t Cout) {
  if constexpr (kReduced<T>) {  // the bias inside the reduced GEMM, before its one rounding
    if (!dev.is_cuda())
      return gemm_reduced(false, true, N, Cout, Cin, x, Cin, w, Cin, false, y, dtype_of<T>::value,
                          Cout, b);
  }
  if (b) fill_rows(dev, y, b, N, Cout);
  gemm(dev, false, true, N, Cout, Cin, x, Cin, w, Cin, b != nullptr, y, Cout);
}
// The float32 / float64 column sums: blocks of kRows rows in T, the blocks in double.
template <typename T>
void bias_backward_blocks(const T* dy, T* db, int64_t N, int64_t Cout) {
  // Blocks of kRows rows are summed in T (vectorised across columns), each block's sum added
  // into a double accumulator: T rounding over at most kRows terms, double across blocks.
  constexpr int64_t kRows = 16;
  std::vector<double> acc(Cout, 0.0);
  std::vector<T> part(Cout);
  for (int64_t r0 = 0; r0 < N; r0 += kRows) {
    const int64_t r1 = std::min(N, r0 + kRows);
    std::copy(dy + r0 * Cout, dy + (r0 + 1) * Cout, part.begin());
    T* __restrict p = part.data();
    for (int64_t r = r0 + 1; r < r1; ++r) {
      const T* __restrict row = dy + r * Cout;
      for (int64_t c = 0; c < Cout; ++c) p[c] += row[c];
    }
    double* __restrict a = acc.data();
    for (int64_t c = 0; c < Cout; ++c) a[c] += static_cast<double>(p[c]);
  }
  for (int64_t c = 0; c < Cout; ++c) db[c] = static_cast<T>(acc[c]);
}

// db (Cout) = column sums of dy (N, Cout).
template <typename T>
void bias_backward(Device dev, const T* dy, T* db, int64_t N, int64_t Cout) {
  if (dev.is_cuda()) {
    kernels("linear backward", dev).reduce_sum(cdt(dtype_of<T>::value), db, dy, 1, N, Cout, 1.0);
    return;
  }
  if constexpr (kReduced<T>) {  // rows loaded as float32, summed in double, rounded once
    std::vector<double> acc(Cout, 0.0);
    std::vector<float> row(Cout);
    for (int64_t r = 0; r < N; ++r) {
      convert::to_float(dtype_of<T>::value, row.data(), dy + r * Cout, Cout);
      for (int64_t c = 0; c < Cout; ++c) acc[c] += row[c];
    }
    for (int64_t c = 0; c < Cout; ++c) row[c] = static_cast<float>(acc[c]);
    convert::from_float(dtype_of<T>::value, db, row.data(), Cout);
  } else {
    bias_backward_blocks(dy, db, N, Cout);
  }
}

}  // namespace

// ---- public ops ----
Tensor matmul(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("matmul", {&a, &b})) return matmul((*c)[0], (*c)[1], site);
  check_operands("matmul", a, b);
  return matmul_impl("matmul", a, b);
}

Tensor mm(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("mm", {&a, &b})) return mm((*c)[0], (*c)[1], site);
  check_operands("mm", a, b);
  if (a.dim() != 2 || b.dim() != 2)
    throw Error(fmt::format("mm: lhs {} and rhs {}: both must be 2-D (N, K)·(K, M)",
                            shape_str(a.shape()), shape_str(b.shape())));
  return matmul_impl("mm", a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("bmm", {&a, &b})) return bmm((*c)[0], (*c)[1], site);
  check_operands("bmm", a, b);
  if (a.dim() != 3 || b.dim() != 3)
    throw Error(fmt::format("bmm: lhs {} and rhs {}: both must be 3-D (B, N, K)·(B, K, M)",
                            shape_str(a.shape()), shape_str(b.shape())));
  if (a.size(0) != b.size(0))
    throw Error(fmt::format("bmm: lhs {} and rhs {}: batch sizes {} != {} (bmm does not broadcast)",
                            shape_str(a.shape()), shape_str(b.shape()), a.size(0), b.size(0)));
  return matmul_impl("bmm", a, b);
}

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in, Site site) {
  SiteScope scope(site);
  if (auto c = autocast::cast("linear", {&x_in, &weight_in, &bias_in}))
    return linear((*c)[0], (*c)[1], (*c)[2], site);
  const Tensor x = contig(x_in);
  const Tensor weight = contig(weight_in);
  const Tensor bias = contig(bias_in);
  check_linear(x, weight, bias);
  if (x.dtype() != weight.dtype()) return matmul_mixed::linear(x, weight, bias);  // checked: mixed
  const int64_t Cin = weight.size(1), Cout = weight.size(0);
  const int64_t N =
      Cin ? x.numel() / Cin : shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  Shape out_shape = x.shape();
  out_shape.back() = Cout;
  const bool skip = N == 0 || Cout == 0 || Cin == 0;
  const Device dev = x.device();
  Tensor out = skip ? zeros(out_shape, x.dtype(), dev) : Tensor::empty(out_shape, x.dtype(), dev);
  dispatch_gemm(x.dtype(), "linear", [&](auto tag) {
    using T = decltype(tag);
    if (!skip) {
      linear_forward(dev, dptr<T>(x), dptr<T>(weight), bias.defined() ? dptr<T>(bias) : nullptr,
                     dptr<T>(out), N, Cin, Cout);
    } else if (bias.defined() && N > 0 && Cout > 0) {  // Cin == 0: the bias on every row
      fill_rows(dev, dptr<T>(out), dptr<T>(bias), N, Cout);
    }
  });
  if (needs_record({&x, &weight, &bias})) {
    const bool gx = x.requires_grad(), gw = weight.requires_grad(),
               gb = bias.defined() && bias.requires_grad();
    Shape sx_shape = x.shape(), sw_shape = weight.shape();
    // Cost model: 2·N·Cin·Cout (+ N·Cout bias) forward; 2·N·Cin·Cout per dx/dW, N·Cout for db.
    const double nmk2 = 2.0 * static_cast<double>(N) * Cin * Cout,
                 nc = static_cast<double>(N) * Cout;
    RecordInfo info =
        RecordInfo().flops(nmk2 + (bias.defined() ? nc : 0), nmk2 * (gx + gw) + (gb ? nc : 0));
    Saved hx = gw ? info.save(x) : Saved();       // dW reads x
    Saved hw = gx ? info.save(weight) : Saved();  // dx reads W
    record("linear", out, {x, weight, bias}, info.differentiable(),
           [hx, hw, sx_shape, sw_shape, gx, gw, gb, skip, N, Cin, Cout,
            dev](const Tensor& dy) -> std::vector<Tensor> {
             const Tensor sx = hx.get(), sw = hw.get();
             if (creating_graph()) {  // dx = dy·W, dW = dyᵀ·x, db = Σ dy over the rows
               const Tensor dy2 = reshape(dy, {N, Cout});
               Tensor dx, dw, db;
               if (gx) dx = reshape(matmul(dy2, sw), sx_shape);
               if (gw) dw = matmul(transpose(dy2, 0, 1), reshape(sx, {N, Cin}));
               if (gb) db = sum(dy2, {0});
               return {dx, dw, db};
             }
             Tensor dx, dw, db;
             auto make = [&](const Shape& s) {
               return skip ? zeros(s, dy.dtype(), dev) : Tensor::empty(s, dy.dtype(), dev);
             };
             if (gx) dx = make(sx_shape);
             if (gw) dw = make(sw_shape);
             if (gb)
               db =
                   N == 0 ? zeros({Cout}, dy.dtype(), dev) : Tensor::empty({Cout}, dy.dtype(), dev);
             dispatch_gemm(dy.dtype(), "linear backward", [&](auto tag) {
               using T = decltype(tag);
               const T* pdy = dptr<T>(dy);
               if (gb && N > 0 && Cout > 0) bias_backward(dev, pdy, dptr<T>(db), N, Cout);
               if (skip) return;
               // dx (N, Cin) = dy (N, Cout) · W (Cout, Cin)
               if (gx)
                 gemm(dev, false, false, N, Cin, Cout, pdy, Cout, dptr<T>(sw), Cin, false,
                      dptr<T>(dx), Cin);
               // dW (Cout, Cin) = dyᵀ (Cout, N) · x (N, Cin)
               if (gw)
                 gemm(dev, true, false, Cout, Cin, N, pdy, Cout, dptr<T>(sx), Cin, false,
                      dptr<T>(dw), Cin);
             });
             return {dx, dw, db};
           });
  }
  return out;
}

Tensor Tensor::matmul(const Tensor& other, Site site) const {
  return tg::matmul(*this, other, site);
}

}  // namespace tg
