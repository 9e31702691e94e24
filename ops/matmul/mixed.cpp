// ops/matmul/mixed.cpp — matmul / linear of float32 with bfloat16 / float16 (see mixed.hpp),
// forward and backward side by side. Every product, forward or backward, is one call of gemm_f32: a
// float32 result from float32 operands (cpu::gemm) or from one float32 and one reduced operand
// (cpu::gemm_mixed, the reduced one converted panel by panel). A reduced operand's gradient is
// that float32 result rounded once; a broadcast operand's gradient sums its batches in float32
// first. The recorded (create_graph) backward is the same products as recorded ops, each
// gradient cast to its operand's dtype.
// Deliberately not here: the same-dtype products (matmul.cpp), the panel kernel (cpu/).
#include "ops/matmul/mixed.hpp"

#include "ops/core/cpu/kernels.hpp"
#include "ops/core/detail.hpp"
#include "ops/matmul/cpu/mixed_gemm.hpp"
#include "ops/matmul/plan.hpp"
#include "ops/ops.hpp"

#include <cstring>

namespace tg::matmul_mixed {
using namespace detail;
using namespace matmul_plan;

namespace {

// Element i of t's data (t's dtype), as an untyped pointer.
const void* at(const Tensor& t, int64_t i) {
  return static_cast<const char*>(t.data_ptr()) + i * static_cast<int64_t>(dtype_size(t.dtype()));
}

// C (M, N) float32 = op(A) · op(B) (+ C when acc); A and B float32, or one of them reduced.
void gemm_f32(DType da, DType db, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A,
              int64_t lda, const void* B, int64_t ldb, bool acc, float* C, int64_t ldc) {
  for (int64_t v : {M, N, K, lda, ldb, ldc}) check_blas_int(v);
  if (!is_reduced(da) && !is_reduced(db))
    return cpu::gemm<float>(ta, tb, M, N, K, 1.0f, static_cast<const float*>(A), lda,
                            static_cast<const float*>(B), ldb, acc ? 1.0f : 0.0f, C, ldc);
  cpu::MixedGemm g;
  g.a = da, g.b = db, g.ta = ta, g.tb = tb, g.M = M, g.N = N, g.K = K;
  g.A = A, g.lda = lda, g.B = B, g.ldb = ldb, g.C = C, g.ldc = ldc, g.accumulate = acc;
  cpu::gemm_mixed(g);
}

// A gradient of shape s and dtype dt computed in float32: fill writes the float32 values (into
// zeros when zeroed: it accumulates), rounded once when dt is reduced.
template <typename F>
Tensor grad_in_float32(const Shape& s, DType dt, bool zeroed, F&& fill) {
  Tensor f = zeroed ? zeros(s, kFloat32) : Tensor::empty(s, kFloat32);
  fill(f.data<float>());
  return dt == kFloat32 ? f : f.to(dt);
}

Tensor to_float32(const Tensor& t) {
  return t.defined() && t.dtype() != kFloat32 ? t.to(kFloat32) : t;
}
Tensor cast_back(const Tensor& g, DType dt) {
  return g.defined() && g.dtype() != dt ? g.to(dt) : g;
}

}  // namespace

bool is_mixed(DType a, DType b) {
  return (a == kFloat32 && is_reduced(b)) || (b == kFloat32 && is_reduced(a));
}

Tensor matmul(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb) {
  if (a.device().is_cuda()) return tg::matmul(to_float32(a), to_float32(b));
  Plan p = make_plan(op, a, b, ta, tb);
  const DType da = a.dtype(), db = b.dtype();
  Tensor out = empty_gemm(p) ? zeros(p.out_shape, kFloat32) : Tensor::empty(p.out_shape, kFloat32);
  if (!empty_gemm(p))
    for (int64_t i = 0; i < p.batch; ++i)
      gemm_f32(da, db, p.ta, p.tb, p.M, p.N, p.K, at(a, p.a_offset(i)), p.lda(),
               at(b, p.b_offset(i)), p.ldb(), false, out.data<float>() + i * p.M * p.N, p.N);
  if (!needs_record({&a, &b})) return out;
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  Shape shape_a = a.shape(), shape_b = b.shape();
  const double mnk2 = 2.0 * static_cast<double>(p.batch) * p.M * p.N * p.K;
  RecordInfo info = RecordInfo().flops(mnk2, mnk2 * (ga + gb));
  Saved ha = gb ? info.save(a) : Saved();  // dB reads A
  Saved hb = ga ? info.save(b) : Saved();  // dA reads B
  record(op, out, {a, b}, info.differentiable(),
         [p = std::move(p), ha, hb, shape_a, shape_b, ga, gb, da,
          db](const Tensor& dC_in) -> std::vector<Tensor> {
           const Tensor sa = ha.get(), sb = hb.get();
           if (creating_graph()) {
             std::vector<Tensor> d = matmul_grads(dC_in, sa, sb, shape_a, shape_b, ga, gb);
             return {cast_back(d[0], da), cast_back(d[1], db)};
           }
           const Tensor dC = contig(dC_in);
           const bool skip = empty_gemm(p);
           const int64_t M = p.M, N = p.N, K = p.K;
           auto dc = [&](int64_t i) { return dC.data<float>() + i * M * N; };
           Tensor dA, dB;
           if (ga)  // dA = dC·op(B)ᵀ
             dA = grad_in_float32(shape_a, da, skip || p.bcast_a, [&](float* f) {
               for (int64_t i = 0; !skip && i < p.batch; ++i)
                 gemm_f32(kFloat32, db, false, !p.tb, M, K, N, dc(i), N, at(sb, p.b_offset(i)),
                          p.ldb(), p.bcast_a, f + p.a_offset(i), K);
             });
           if (gb)  // dB = op(A)ᵀ·dC
             dB = grad_in_float32(shape_b, db, skip || p.bcast_b, [&](float* f) {
               for (int64_t i = 0; !skip && i < p.batch; ++i)
                 gemm_f32(da, kFloat32, !p.ta, false, K, N, M, at(sa, p.a_offset(i)), p.lda(),
                          dc(i), N, p.bcast_b, f + p.b_offset(i), N);
             });
           return {dA, dB};
         });
  return out;
}

// y (N, Cout) = x (N, Cin) · Wᵀ (+ b on every row, added before the product as linear does).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  if (x.device().is_cuda()) return tg::linear(to_float32(x), to_float32(w), to_float32(bias));
  const int64_t Cin = w.size(1), Cout = w.size(0);
  const int64_t N =
      Cin ? x.numel() / Cin : shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  Shape out_shape = x.shape();
  out_shape.back() = Cout;
  const bool skip = N == 0 || Cout == 0 || Cin == 0;
  const DType dx_t = x.dtype(), dw_t = w.dtype(), db_t = bias.defined() ? bias.dtype() : kFloat32;
  Tensor out = skip ? zeros(out_shape, kFloat32) : Tensor::empty(out_shape, kFloat32);
  if (bias.defined() && N > 0 && Cout > 0) {
    Tensor b32;
    {
      NoGradGuard ng;
      b32 = to_float32(bias.detach());
    }
    for (int64_t r = 0; r < N; ++r)
      std::memcpy(out.data<float>() + r * Cout, b32.data<float>(), Cout * sizeof(float));
  }
  if (!skip)
    gemm_f32(dx_t, dw_t, false, true, N, Cout, Cin, x.data_ptr(), Cin, w.data_ptr(), Cin,
             bias.defined(), out.data<float>(), Cout);
  if (!needs_record({&x, &w, &bias})) return out;
  const bool gx = x.requires_grad(), gw = w.requires_grad(),
             gb = bias.defined() && bias.requires_grad();
  Shape sx_shape = x.shape(), sw_shape = w.shape();
  const double nmk2 = 2.0 * static_cast<double>(N) * Cin * Cout, nc = static_cast<double>(N) * Cout;
  RecordInfo info =
      RecordInfo().flops(nmk2 + (bias.defined() ? nc : 0), nmk2 * (gx + gw) + (gb ? nc : 0));
  Saved hx = gw ? info.save(x) : Saved();  // dW reads x
  Saved hw = gx ? info.save(w) : Saved();  // dx reads W
  record("linear", out, {x, w, bias}, info.differentiable(),
         [hx, hw, sx_shape, sw_shape, gx, gw, gb, skip, N, Cin, Cout, dx_t, dw_t,
          db_t](const Tensor& dy_in) -> std::vector<Tensor> {
           const Tensor sx = hx.get(), sw = hw.get();
           const Tensor dy = contig(dy_in);
           const Tensor dy2 = reshape(dy, {N, Cout});
           Tensor dx, dw, db;
           if (gb) db = cast_back(N == 0 ? zeros({Cout}) : sum(dy2, {0}), db_t);
           if (creating_graph()) {  // dx = dy·W, dW = dyᵀ·x, each cast to its operand's dtype
             if (gx) dx = cast_back(reshape(matmul(dy2, sw), sx_shape), dx_t);
             if (gw) dw = cast_back(matmul(transpose(dy2, 0, 1), reshape(sx, {N, Cin})), dw_t);
             return {dx, dw, db};
           }
           if (gx)  // dx (N, Cin) = dy (N, Cout) · W (Cout, Cin)
             dx = grad_in_float32(sx_shape, dx_t, skip, [&](float* f) {
               if (!skip)
                 gemm_f32(kFloat32, dw_t, false, false, N, Cin, Cout, dy.data_ptr(), Cout,
                          sw.data_ptr(), Cin, false, f, Cin);
             });
           if (gw)  // dW (Cout, Cin) = dyᵀ (Cout, N) · x (N, Cin)
             dw = grad_in_float32(sw_shape, dw_t, skip, [&](float* f) {
               if (!skip)
                 gemm_f32(kFloat32, dx_t, true, false, Cout, Cin, N, dy.data_ptr(), Cout,
                          sx.data_ptr(), Cin, false, f, Cin);
             });
           return {dx, dw, db};
         });
  return out;
}

}  // namespace tg::matmul_mixed
