// tests/autograd/test_tensor.cpp — tensor metadata, creation, conversion, printing, seeding, npy.
#include "helpers.hpp"

#include "autograd/io.hpp"
#include "autograd/xtensor.hpp"

#include <xtensor/xnpy.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>

using namespace tg;

TEST_CASE("tensor metadata and creation") {
  Tensor t = zeros({2, 3, 4});
  REQUIRE(t.numel() == 24);
  REQUIRE(t.dim() == 3);
  REQUIRE(t.size(-1) == 4);
  REQUIRE(t.size(0) == 2);
  REQUIRE(t.strides() == Shape{12, 4, 1});
  REQUIRE(t.dtype() == kFloat32);
  REQUIRE(t.device() == kCPU);
  REQUIRE_ERROR(t.size(3), "size: dim 3 out of range for a tensor of shape (2,3,4)");
  REQUIRE(ones({3}, kFloat64).to_vector<double>() == std::vector<double>{1, 1, 1});
  REQUIRE(full({2}, 2.5).to_vector<float>() == std::vector<float>{2.5f, 2.5f});
  REQUIRE(arange(5).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  REQUIRE(arange(1, 2, 0.25, kFloat64).to_vector<double>() ==
          std::vector<double>{1, 1.25, 1.5, 1.75});
  REQUIRE(eye(2).to_vector<float>() == std::vector<float>{1, 0, 0, 1});
  REQUIRE(tensor(std::vector<bool>{true, false}).dtype() == kBool);
  REQUIRE(scalar_tensor(3).dim() == 0);
  REQUIRE(scalar_tensor(3).item<float>() == 3.0f);
  REQUIRE_ERROR(tensor(std::vector<float>{1, 2, 3}, {2, 2}), "3 values do not fill shape (2,2)");
  REQUIRE_ERROR(zeros({2, 2}).item<float>(), "item: tensor of shape (2,2) has 4 elements");
  REQUIRE_ERROR(zeros({2}).data<double>(), "tensor has dtype float32, requested float64");
  REQUIRE_ERROR(zeros({2}, kInt64).requires_grad_(),
                "only floating-point tensors can require grad");
  REQUIRE_ERROR(Tensor().shape(), "shape: tensor is undefined");
}

TEST_CASE("tensor handles share storage - clone and detach") {
  Tensor a = zeros({3});
  Tensor b = a;  // same handle
  b.data<float>()[0] = 7;
  REQUIRE(a.data<float>()[0] == 7);
  Tensor c = a.clone();
  c.data<float>()[1] = 5;
  REQUIRE(a.data<float>()[1] == 0);
  Tensor d = a.detach();
  d.data<float>()[2] = 3;
  REQUIRE(a.data<float>()[2] == 3);
  REQUIRE(a.to(kFloat64).to_vector<double>() == std::vector<double>{7, 0, 3});
  REQUIRE(a.to(kInt64).to_vector<int64_t>() == std::vector<int64_t>{7, 0, 3});
  REQUIRE(tensor(std::vector<int64_t>{-1, 0, 4}).to(kBool).to_vector<bool>() ==
          std::vector<bool>{true, false, true});
}

TEST_CASE("manual_seed makes random creation reproducible") {
  manual_seed(42);
  std::vector<float> a = randn({100}).to_vector<float>();
  std::vector<int64_t> ia = randint(0, 10, {50}).to_vector<int64_t>();
  manual_seed(42);
  REQUIRE(randn({100}).to_vector<float>() == a);
  REQUIRE(randint(0, 10, {50}).to_vector<int64_t>() == ia);
  // Moments of a large sample.
  manual_seed(1);
  Tensor r = randn({100000}, kFloat64);
  std::vector<double> v = r.to_vector<double>();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= v.size();
  for (double x : v) s += (x - m) * (x - m);
  s /= v.size();
  REQUIRE(std::fabs(m) < 0.02);
  REQUIRE(std::fabs(s - 1) < 0.02);
  Tensor u = rand({100000}, kFloat64);
  for (double x : u.to_vector<double>()) REQUIRE((x >= 0 && x < 1));
  // Shuffling: a permutation, reproducible.
  manual_seed(9);
  std::vector<int64_t> perm = randperm(100).to_vector<int64_t>();
  manual_seed(9);
  REQUIRE(randperm(100).to_vector<int64_t>() == perm);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(sorted == arange(100).to_vector<int64_t>());
  REQUIRE(perm != sorted);
  REQUIRE_ERROR(randperm(-1), "randperm: n must be >= 0, got -1");
  // Generator state round trip.
  std::string st = default_generator().get_state();
  double n1 = default_generator().normal();
  default_generator().set_state(st);
  REQUIRE(default_generator().normal() == n1);
}

TEST_CASE("printing follows PyTorch's repr") {
  Tensor t = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  REQUIRE(t.str() == "tensor([[1., 2.],\n        [3., 4.]], shape=(2,2), dtype=float32)");
  Tensor f = tensor(std::vector<double>{0.5, -1.25});
  REQUIRE(f.str() == "tensor([0.5000, -1.2500], shape=(2), dtype=float64)");
  Tensor big = zeros({2000});
  std::string s = big.str();
  REQUIRE(s.find("...") != std::string::npos);
  REQUIRE(s.size() < 200);
  REQUIRE(tensor(std::vector<bool>{true}).str() == "tensor([True], shape=(1), dtype=bool)");
  Tensor g = ones({1}, kFloat64).requires_grad_();
  REQUIRE(g.str().find("requires_grad=True") != std::string::npos);
}

TEST_CASE("npy round trip and xtensor interop") {
  std::string path = "tg_test_roundtrip.npy";
  for (DType dt : {kFloat32, kFloat64, kInt64, kBool}) {
    Tensor t = arange(0, 6, 1, kFloat64).reshape({2, 3}).to(dt);
    save_npy(path, t);
    Tensor u = load_npy(path);
    REQUIRE(u.dtype() == dt);
    REQUIRE(u.shape() == Shape{2, 3});
    REQUIRE(u.to_vector<double>() == t.to_vector<double>());
  }
  {
    std::ofstream f(path, std::ios::binary);
    f << "not an npy file";
  }
  REQUIRE_ERROR(load_npy(path), "is not a valid .npy file");
  REQUIRE_ERROR(load_npy("/nonexistent/x.npy"), "load_npy: cannot open /nonexistent/x.npy");
  std::remove(path.c_str());

  Tensor t = arange(0, 6, 1, kFloat64).reshape({2, 3});
  auto view = as_xarray<double>(t);  // zero copy
  view(1, 2) = 42;
  REQUIRE(t.data<double>()[5] == 42);
  xt::xarray<double> x = to_xarray<double>(t);
  REQUIRE(x.shape(0) == 2);
  REQUIRE(x(1, 2) == 42);
  Tensor back = from_xarray(x);
  REQUIRE(back.to_vector<double>() == t.to_vector<double>());
}

namespace {
// An .npy file with a hand-written header: typestring ts, shape (n,), the given data bytes.
void write_npy_raw(const std::string& path, const std::string& ts, size_t n,
                   const std::string& data) {
  std::string header =
      "{'descr': '" + ts + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8)
    << header << data;
}
template <typename T>
void check_int_npy(const std::string& path, std::vector<T> v) {
  xt::xarray<T> a = xt::adapt(v, {v.size()});
  {
    std::ofstream f(path, std::ios::binary);
    f << xt::dump_npy(a);
  }
  Tensor u = load_npy(path);
  REQUIRE(u.dtype() == kInt64);
  std::vector<int64_t> want(v.begin(), v.end());
  REQUIRE(u.to_vector<int64_t>() == want);
}
}  // namespace

TEST_CASE("npy: integer token files of every width load as int64, others are refused") {
  const std::string path = "tg_test_ints.npy";
  check_int_npy<uint8_t>(path, {0, 1, 200, 255});
  check_int_npy<int8_t>(path, {-128, -1, 0, 127});
  check_int_npy<uint16_t>(path, {0, 50256, 65535});
  check_int_npy<int16_t>(path, {-32768, 7, 32767});
  check_int_npy<int32_t>(path, {-2147483647 - 1, 5, 2147483647});
  check_int_npy<uint32_t>(path, {0, 4294967295u});
  check_int_npy<uint64_t>(path, {0, uint64_t(1) << 62});
  // Big-endian int32 (1, -2) and float32 (1.5).
  write_npy_raw(path, ">i4", 2, std::string("\0\0\0\x01\xff\xff\xff\xfe", 8));
  REQUIRE(load_npy(path).to_vector<int64_t>() == std::vector<int64_t>{1, -2});
  write_npy_raw(path, ">f4", 1, std::string("\x3f\xc0\0\0", 4));
  REQUIRE(load_npy(path).to_vector<float>() == std::vector<float>{1.5f});
  write_npy_raw(path, "<u8", 1, std::string(8, '\xff'));
  REQUIRE_ERROR(load_npy(path), "does not fit int64");
  write_npy_raw(path, "<f2", 2, std::string("\x00\x3c\x00\xc0", 4));  // float16 1, -2
  REQUIRE(load_npy(path).dtype() == kFloat16);
  REQUIRE(load_npy(path).to(kFloat32).to_vector<float>() == std::vector<float>{1, -2});
  write_npy_raw(path, "<c8", 1, std::string(8, '\0'));
  REQUIRE_ERROR(load_npy(path), "has dtype '<c8'; supported: float16/32/64");
  std::remove(path.c_str());
}

TEST_CASE("set_num_threads governs one setting") {
  int before = get_num_threads();
  set_num_threads(1);
  REQUIRE(get_num_threads() == 1);
  set_num_threads(before);
  REQUIRE_ERROR(set_num_threads(0), "set_num_threads: n must be >= 1");
}

TEST_CASE("fmt prints tensors with their repr") {
  Tensor t = tensor(std::vector<double>{0.5, 2});
  REQUIRE(fmt::format("{}", t) == t.str());
  REQUIRE(fmt::format("x = {}", Tensor()) == "x = tensor(undefined)");
}

TEST_CASE("element counts that overflow int64 are refused, not wrapped") {
  REQUIRE_ERROR(zeros({int64_t(1) << 32, int64_t(1) << 32}), "the element count overflows int64");
  REQUIRE_ERROR(zeros({3037000500, 3037000500}), "(3037000500,3037000500): the element count");
  REQUIRE_ERROR(zeros({int64_t(1) << 62}, kFloat64), "needs more than 2^63 bytes");
  // A zero dimension means no elements, whatever the others are.
  REQUIRE(zeros({int64_t(1) << 40, int64_t(1) << 40, 0}).numel() == 0);
  Tensor x = zeros({4});
  REQUIRE_ERROR(x.reshape({int64_t(1) << 32, int64_t(1) << 32}), "overflows int64");
}

TEST_CASE("npy: a header whose shape overflows or exceeds the file is refused before allocating") {
  const std::string path = "tg_test_npy_header.npy";
  auto write = [&](const std::string& shape, const std::string& data) {
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::ofstream f(path, std::ios::binary);
    f << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8)
      << header << data;
  };
  write("(2305843009213693952, 8)", "");  // (2^61, 8): 2^64 elements, no data
  REQUIRE_ERROR(load_npy(path), "shape (2305843009213693952, 8) of '<f8' has more elements than");
  write("(1000,)", std::string(8, '\0'));
  REQUIRE_ERROR(load_npy(path), "needs 8000 data bytes but the file holds 8");
  write("(0, 2305843009213693952)", "");  // no elements: fine
  REQUIRE(load_npy(path).numel() == 0);
  write("(2,)", std::string(16, '\0'));
  REQUIRE(load_npy(path).to_vector<double>() == std::vector<double>{0, 0});
  std::remove(path.c_str());
}

TEST_CASE("from_blob: a tensor over memory it does not own, released with its owner") {
  auto released = std::make_shared<int>(0);
  {
    auto buf = std::shared_ptr<float>(new float[6]{1, 2, 3, 4, 5, 6}, [released](float* p) {
      ++*released;
      delete[] p;
    });
    Tensor t = from_blob(buf.get(), {2, 3}, kFloat32, buf);
    const float* raw = buf.get();
    buf.reset();  // the tensor keeps the memory alive
    REQUIRE(*released == 0);
    REQUIRE(t.data<float>() == raw);
    REQUIRE(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
    Tensor v = t.transpose(0, 1);  // views share the storage
    t = Tensor();
    REQUIRE(*released == 0);
    REQUIRE(v.contiguous().to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
    REQUIRE(((v * 2).sum()).item<double>() == 42);
  }
  REQUIRE(*released == 1);
  alignas(8) unsigned char bytes[16] = {};
  REQUIRE_ERROR(from_blob(bytes + 1, {2}, kFloat32, nullptr), "from_blob: data at");
  REQUIRE_ERROR(from_blob(bytes, {-1}, kFloat32, nullptr),
                "from_blob: negative dimension in shape (-1)");
}
