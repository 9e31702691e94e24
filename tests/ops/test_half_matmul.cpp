
TEST_CASE("half matmul: CUDA bf16/f16 GEMMs (cublasGemmEx, float32 compute) match the CPU") {
  if (!cuda_is_available()) return;  // no device: nothing to run (the emulator build runs it)
  const Device dev = cuda_device(0);
  manual_seed(5);
  for (DType dt : {kBFloat16, kFloat16}) {
    // (2-D, odd sizes) and bmm, forward and both gradients; cuBLAS sums in float32 in its own
    // order and rounds once, like the CPU paths: 1 ulp (the file head).
    const std::vector<std::pair<Shape, Shape>> shapes = {{{33, 70}, {70, 41}},
                                                         {{3, 17, 40}, {3, 40, 23}}};
    for (const auto& [sa, sb] : shapes) {
      INFO(dtype_name(dt) << " lhs " << shape_str(sa) << " rhs " << shape_str(sb));
      const Tensor a = randn(sa).to(dt), b = randn(sb).to(dt);
      Tensor ac = a.clone().requires_grad_(), bc = b.clone().requires_grad_();
      Tensor ag = a.to(dev).requires_grad_(), bg = b.to(dev).requires_grad_();
      const Tensor yc = matmul(ac, bc), yg = matmul(ag, bg);
      REQUIRE(yg.dtype() == dt);
      const Tensor g = randn(yc.shape()).to(dt);
      yc.backward(g);
      yg.backward(g.to(dev));
      CHECK(max_ulps(yg.to(kCPU), yc, dt) <= 1.0);
      CHECK(max_ulps(ag.grad().to(kCPU), ac.grad(), dt) <= 1.0);
      CHECK(max_ulps(bg.grad().to(kCPU), bc.grad(), dt) <= 1.0);
    }
  }
}
