// tests/nn/test_checkpoint.cpp — safetensors round trips, byte-exact layout against files written
// by tools/make_safetensors_fixture.py, a table of malformed files with their exact errors,
// load_model's checks, atomic writes, and bit-exact training resume (in process, and in fresh
// processes: the test re-executes this binary (/proc/self/exe) on a hidden test case).
#include "helpers.hpp"

#include "nn/checkpoint.hpp"
#include "nn/layers.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

using namespace tg;
namespace fs = std::filesystem;

extern char** environ;

namespace {

const std::string kFixtures = std::string(TG_FIXTURES) + "/safetensors";

struct TempDir : tgt::TempDir {
  TempDir() : tgt::TempDir("ckpt") {}
};

using tgt::read_bytes;
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out);
}
std::string raw(const Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()),
                     static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
}
// Same names in the same order, same dtype, shape and bytes.
void require_same(const nn::StateDict& a, const nn::StateDict& b) {
  REQUIRE(a.keys() == b.keys());
  for (const auto& [k, t] : a) {
    INFO(k);
    REQUIRE(t.dtype() == b.at(k).dtype());
    REQUIRE(t.shape() == b.at(k).shape());
    REQUIRE(raw(t) == raw(b.at(k)));
  }
}
std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
// A file: header length, header text, data.
std::string st_file(const std::string& header, const std::string& data = "") {
  return u64_le(header.size()) + header + data;
}

// The content of tests/fixtures/safetensors/reference.safetensors (see the Python script).
nn::StateDict reference_content() {
  nn::StateDict d;
  d.insert("weight", tensor(std::vector<float>{0.5f, -1.25f, 3.0f, 0.1f, -0.0f, 1e-3f}, {2, 3}));
  d.insert("bias", tensor(std::vector<double>{1.0 / 3.0, -2.5, 1e300}));
  d.insert("index",
           tensor(std::vector<int64_t>{0, -1, int64_t(1) << 40, -(int64_t(1) << 62)}, {2, 2}));
  d.insert("mask", tensor(std::vector<bool>{true, false, true, true, false}));
  d.insert("scale", scalar_tensor(2.0));
  d.insert("empty", zeros({0, 4}, kFloat64));
  d.insert("after_empty", tensor(std::vector<int64_t>{7}));
  return d;
}
const nn::Metadata kReferenceMeta{{"format", "pt"}, {"source", "make_safetensors_fixture.py"}};

// The content of written_by_tapegrad.safetensors (the script's TAPEGRAD list).
nn::StateDict tapegrad_content() {
  nn::StateDict d;
  d.insert("layers.0.weight",
           tensor(std::vector<float>{0.25f, -0.5f, 1.5f, 2.0f, -3.0f, 0.75f}, {3, 2}));
  d.insert("layers.0.bias", tensor(std::vector<float>{0.125f, 0.0f, -1.0f}));
  d.insert("step", scalar_tensor(42, kInt64));
  d.insert("flags", tensor(std::vector<bool>{true, false, false, true}, {2, 2}));
  d.insert("table", tensor(std::vector<double>{0.1, 0.2, 0.3, -1e-300}, {2, 2}));
  d.insert("nothing", zeros({0}));
  return d;
}
const nn::Metadata kTapegradMeta{{"note", "written by tapegrad"},
                                 {"unicode", "h\xc3\xa9llo \xe2\x9c\x93"}};

}  // namespace

TEST_CASE("safetensors round trip: every dtype, 0-dim and empty tensors, metadata",
          "[checkpoint]") {
  TempDir dir;
  manual_seed(3);
  nn::StateDict d;
  d.insert("f32", randn({3, 4}));
  d.insert("f64", randn({2, 1, 5}, kFloat64));
  d.insert("i64", randint(-1000, 1000, {7}));
  d.insert("bool", tensor(std::vector<bool>{true, false, false}));
  d.insert("scalar", scalar_tensor(-1.5, kFloat64));
  d.insert("empty", zeros({2, 0, 3}));
  d.insert("z.last", scalar_tensor(1, kBool));
  nn::Metadata meta{{"a", "1"}, {"quote\"and\\slash", "new\nline"}, {"", ""}};
  nn::save_safetensors(dir / "rt.safetensors", d, meta);
  nn::SafetensorsFile f = nn::load_safetensors(dir / "rt.safetensors");
  require_same(f.tensors, d);
  REQUIRE(f.metadata == meta);
  // The header is padded to a multiple of 8.
  REQUIRE(read_bytes(dir / "rt.safetensors")[0] % 8 == 0);
  // No metadata and no tensors: the reference's 16-byte file.
  nn::save_safetensors(dir / "empty.safetensors", {}, {});
  REQUIRE(read_bytes(dir / "empty.safetensors") == std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  REQUIRE(nn::load_safetensors(dir / "empty.safetensors").tensors.empty());
  REQUIRE_ERROR(nn::save_safetensors(dir / "bad.safetensors",
                                     [] {
                                       nn::StateDict s;
                                       s.insert("x", Tensor());
                                       return s;
                                     }()),
                "tensor \"x\" is undefined");
  REQUIRE_FALSE(fs::exists(dir / "bad.safetensors"));
}

TEST_CASE("safetensors layout matches the reference byte for byte", "[checkpoint]") {
  // Python wrote this file by hand in the reference layout; we read it and write it back.
  const std::string ref = kFixtures + "/reference.safetensors";
  nn::SafetensorsFile f = nn::load_safetensors(ref);
  require_same(f.tensors, reference_content());
  REQUIRE(f.metadata == kReferenceMeta);
  // Our writer adds the per-tensor CRC-32 keys (Python's zlib.crc32 made the expected file).
  const std::string ref_crc = kFixtures + "/reference_checksummed.safetensors";
  REQUIRE(nn::safetensors_bytes(reference_content(), kReferenceMeta, "x") == read_bytes(ref_crc));
  REQUIRE(nn::load_safetensors(ref_crc).metadata == kReferenceMeta);

  // The reverse direction: a file our writer made, checked by hand with
  // `/usr/bin/python3 tools/make_safetensors_fixture.py --verify`. It must stay what we write.
  const std::string ours = kFixtures + "/written_by_tapegrad.safetensors";
  std::string bytes = nn::safetensors_bytes(tapegrad_content(), kTapegradMeta, ours);
  if (std::getenv("TG_WRITE_FIXTURES"))
    nn::save_safetensors(ours, tapegrad_content(), kTapegradMeta);
  REQUIRE(read_bytes(ours) == bytes);
  nn::SafetensorsFile g = nn::load_safetensors(ours);
  require_same(g.tensors, tapegrad_content());
  REQUIRE(g.metadata == kTapegradMeta);
}

TEST_CASE("safetensors checksums: a flipped data bit names the tensor and the file",
          "[checkpoint]") {
  TempDir dir;
  const std::string path = dir / "crc.safetensors";
  nn::StateDict d;
  d.insert("a", tensor(std::vector<float>{1, 2, 3, 4}, {2, 2}));
  d.insert("b.weight", tensor(std::vector<double>{0.5, -0.25, 8}));
  d.insert("c", tensor(std::vector<int64_t>{7}, {1}));
  // The caller's metadata comes back unchanged; a stale checksum key the caller passes is replaced.
  const nn::Metadata user{{"note", "mine"}, {"tapegrad.format", "model/1"}};
  nn::Metadata given = user;
  given["tapegrad.crc32.a"] = "00000000";
  nn::save_safetensors(path, d, given);
  nn::SafetensorsFile f = nn::load_safetensors(path);
  require_same(f.tensors, d);
  REQUIRE(f.metadata == user);
  // zlib's CRC-32 of the float32 bytes of 1, 2, 3, 4 (Python: zlib.crc32(struct.pack("<4f", ...))).
  REQUIRE(read_bytes(path).find("\"tapegrad.crc32.a\":\"8ba71454\"") != std::string::npos);

  const std::string bytes = read_bytes(path);
  // Flip one bit of each tensor's data in turn: the error names that tensor and the file.
  const size_t data = bytes.size() - (16 + 24 + 8);
  struct Flip {
    size_t at;
    const char* tensor;
  };
  for (const Flip& fl :
       {Flip{data + 5, "a"}, Flip{data + 16 + 23, "b.weight"}, Flip{bytes.size() - 1, "c"}}) {
    std::string bad = bytes;
    bad[fl.at] = static_cast<char>(bad[fl.at] ^ 0x10);
    write_bytes(dir / "bad.safetensors", bad);
    REQUIRE_ERROR(nn::load_safetensors(dir / "bad.safetensors"),
                  "load_safetensors: " + (dir / "bad.safetensors") + ": tensor \"" + fl.tensor +
                      "\": checksum mismatch");
  }
  // The same flip in a file without checksums (another tool's) is not detectable: it loads.
  nn::StateDict one;
  one.insert("a", d.at("a"));
  std::string plain = read_bytes(kFixtures + "/reference.safetensors");
  plain[plain.size() - 9] = static_cast<char>(plain[plain.size() - 9] ^ 0x01);
  write_bytes(dir / "plain.safetensors", plain);
  REQUIRE(nn::load_safetensors(dir / "plain.safetensors").tensors.size() == 7);
}

TEST_CASE("malformed safetensors files fail with specific errors", "[checkpoint]") {
  TempDir dir;
  const std::string f24(24, '\0'), f16(16, '\0'), f8(8, '\0');
  auto w = [](const std::string& offsets, const std::string& shape = "[2,3]",
              const std::string& dtype = "\"F32\"") {
    return "{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
  };
  struct Case {
    const char* name;
    std::string bytes;
    std::string message;
  };
  std::vector<Case> cases{
      {"short", std::string("\x05\0\0", 3),
       "file is 3 bytes, too short for the 8-byte header length"},
      {"truncated_data", st_file("{\"w\":" + w("[0,24]") + "}", f16),
       "tensor \"w\": data_offsets [0, 24] go past the end of the data section (16 bytes)"},
      {"header_beyond_file", u64_le(1000) + "{}",
       "header length 1000 goes beyond the end of the file (10 bytes)"},
      {"header_absurd", u64_le(uint64_t(1) << 63) + "{}",
       "header length 9223372036854775808 is larger than the 100000000-byte limit"},
      {"bad_json", st_file("{\"w\": {\"dtype\": "), "header is not valid JSON"},
      {"bad_utf8", st_file("{\"\xff\":1}"), "header is not valid JSON"},
      {"not_object", st_file("[1,2]"), "header is a JSON array, not an object"},
      {"entry_not_object", st_file("{\"w\":5}"),
       "tensor \"w\": entry must be an object, got a number"},
      {"missing_dtype",
       st_file("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", std::string(4, '\0')),
       "tensor \"w\": entry has no \"dtype\""},
      {"dtype_not_string", st_file("{\"w\":" + w("[0,24]", "[2,3]", "3") + "}", f24),
       "tensor \"w\": dtype must be a string, got 3"},
      {"unknown_dtype", st_file("{\"w\":" + w("[0,24]", "[2,3]", "\"Q7\"") + "}", f24),
       "tensor \"w\": unknown dtype \"Q7\" (tapegrad reads F32, F64, BF16, F16, I64, BOOL)"},
      {"i8", st_file("{\"w\":" + w("[0,6]", "[2,3]", "\"I8\"") + "}", std::string(6, '\0')),
       "tensor \"w\": dtype I8 is not supported (tapegrad reads F32, F64, BF16, F16, I64, BOOL)"},
      {"bf16_size", st_file("{\"w\":" + w("[0,24]", "[2,3]", "\"BF16\"") + "}", f24),
       "tensor \"w\": shape (2,3) of BF16 needs 12 bytes but data_offsets [0, 24] hold 24"},
      {"negative_shape", st_file("{\"w\":" + w("[0,24]", "[-2,3]") + "}", f24),
       "tensor \"w\": shape holds a negative number -2"},
      {"fractional_shape", st_file("{\"w\":" + w("[0,24]", "[2.5,3]") + "}", f24),
       "tensor \"w\": shape holds 2.5, not a non-negative integer"},
      {"shape_not_array", st_file("{\"w\":" + w("[0,24]", "\"2x3\"") + "}", f24),
       "tensor \"w\": shape must be an array, got \"2x3\""},
      {"shape_overflow", st_file("{\"w\":" + w("[0,24]", "[4294967296,4294967296,16]") + "}", f24),
       "tensor \"w\": shape [4294967296,4294967296,16] is too large"},
      {"offsets_arity", st_file("{\"w\":" + w("[0]") + "}", f24),
       "tensor \"w\": data_offsets must be [begin, end], got [0]"},
      {"offsets_past_end", st_file("{\"w\":" + w("[0,18446744073709551615]") + "}", f24),
       "tensor \"w\": data_offsets [0, 18446744073709551615] go past the end of the data section "
       "(24 bytes)"},
      {"begin_after_end", st_file("{\"w\":" + w("[24,0]") + "}", f24),
       "tensor \"w\": data_offsets [24, 0] has begin > end"},
      {"size_mismatch", st_file("{\"w\":" + w("[0,20]") + "}", std::string(20, '\0')),
       "tensor \"w\": shape (2,3) of F32 needs 24 bytes but data_offsets [0, 20] hold 20"},
      {"overlap",
       st_file("{\"a\":" + w("[0,16]", "[4]") + ",\"b\":" + w("[8,24]", "[4]") + "}", f24),
       "tensor \"b\": data [8, 24) overlaps tensor \"a\" [0, 16)"},
      {"gap", st_file("{\"a\":" + w("[0,8]", "[2]") + ",\"b\":" + w("[16,24]", "[2]") + "}", f24),
       "tensor \"b\": data starts at byte 16 but the bytes before end at 8: 8 unused bytes (a gap"},
      {"trailing", st_file("{\"a\":" + w("[0,8]", "[2]") + "}", f16),
       "the tensors cover 8 of the 16 data bytes: 8 unused bytes at the end"},
      {"duplicate_tensor",
       st_file("{\"a\":" + w("[0,8]", "[2]") + ",\"a\":" + w("[8,16]", "[2]") + "}", f16),
       "tensor \"a\": appears twice in the header (duplicate JSON key)"},
      {"duplicate_field",
       st_file("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,8]}}",
               f8),
       "tensor \"a\": key \"dtype\" appears twice in its entry (duplicate JSON key)"},
      {"metadata_value", st_file("{\"__metadata__\":{\"k\":1}}"),
       "__metadata__ must map strings to strings; \"k\" is a number"},
      {"metadata_duplicate", st_file("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"),
       "__metadata__ has the key \"k\" twice (duplicate JSON key)"},
      {"metadata_not_object", st_file("{\"__metadata__\":\"x\"}"),
       "__metadata__ must be an object mapping strings to strings, got a string"},
      {"bool_byte",
       st_file("{\"m\":" + w("[0,2]", "[2]", "\"BOOL\"") + "}", std::string("\x01\x02", 2)),
       "tensor \"m\": BOOL element 1 has byte value 2 (must be 0 or 1)"},
  };
  REQUIRE(cases.size() >= 25);
  for (const Case& c : cases) {
    const std::string path = dir / (std::string(c.name) + ".safetensors");
    write_bytes(path, c.bytes);
    INFO(c.name);
    REQUIRE_ERROR(nn::load_safetensors(path), "load_safetensors: " + path + ": " + c.message);
  }
  REQUIRE_ERROR(nn::load_safetensors(dir / "absent.safetensors"),
                "load_safetensors: cannot open " + (dir / "absent.safetensors") + ": No such file");
  REQUIRE_ERROR(nn::load_safetensors(dir.path),
                "load_safetensors: " + dir.path + " is not a regular file");
}

TEST_CASE("load_model checks names, shapes and dtypes against the module", "[checkpoint]") {
  TempDir dir;
  manual_seed(5);
  auto src = std::make_shared<nn::Linear>(3, 2);
  auto dst = std::make_shared<nn::Linear>(3, 2);
  const std::string good = dir / "good.safetensors";
  nn::save_safetensors(good, src->state_dict());
  nn::load_model(good, *dst);
  require_same(dst->state_dict(), src->state_dict());

  auto file_with = [&](const std::string& name, const nn::StateDict& d) {
    nn::save_safetensors(dir / name, d);
    return dir / name;
  };
  nn::StateDict only_w;
  only_w.insert("weight", src->weight.detach());
  std::string p = file_with("missing.safetensors", only_w);
  REQUIRE_ERROR(nn::load_model(p, *dst),
                "load_model: " + p + ": Linear.load_state_dict: 1 error(s):\n  missing keys: bias");
  nn::LoadResult r = nn::load_model(p, *dst, /*strict=*/false);
  REQUIRE(r.missing_keys == std::vector<std::string>{"bias"});

  nn::StateDict extra = src->state_dict();
  extra.insert("scale", ones({1}));
  p = file_with("unexpected.safetensors", extra);
  REQUIRE_ERROR(
      nn::load_model(p, *dst),
      "load_model: " + p + ": Linear.load_state_dict: 1 error(s):\n  unexpected keys: scale");
  REQUIRE(nn::load_model(p, *dst, false).unexpected_keys == std::vector<std::string>{"scale"});

  nn::StateDict wrong_shape = src->state_dict();
  wrong_shape.insert("weight", zeros({3, 2}));
  p = file_with("shape.safetensors", wrong_shape);
  REQUIRE_ERROR(nn::load_model(p, *dst), "load_model: " + p +
                                             ": Linear.load_state_dict: 1 error(s):\n  shape "
                                             "mismatch for weight: checkpoint (3,2), model (2,3)");

  nn::StateDict f64 = src->state_dict();
  f64.insert("weight", src->weight.detach().to(kFloat64));
  f64.insert("bias", src->bias.detach().to(kFloat64));
  p = file_with("f64.safetensors", f64);
  REQUIRE_ERROR(nn::load_model(p, *dst),
                "dtype mismatch for weight: checkpoint float64, model float32");
  auto fresh = std::make_shared<nn::Linear>(3, 2);
  nn::load_model(p, *fresh, true, /*convert_dtypes=*/true);
  require_same(fresh->state_dict(), src->state_dict());
  nn::StateDict ints = src->state_dict();
  ints.insert("bias", zeros({2}, kInt64));
  p = file_with("int.safetensors", ints);
  REQUIRE_ERROR(nn::load_model(p, *fresh, true, true),
                "dtype mismatch for bias: checkpoint int64, model float32");
}

TEST_CASE("a failed save leaves the previous file intact", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  nn::StateDict a;
  a.insert("x", tensor(std::vector<float>{1, 2, 3}));
  nn::save_safetensors(path, a, {{"v", "1"}});
  const std::string before = read_bytes(path);
  // write_file_atomic writes <path>.tmp.<pid> first: a directory there makes that step fail,
  // like a crash before the rename.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  fs::create_directory(tmp);
  nn::StateDict b;
  b.insert("x", tensor(std::vector<float>{4, 5, 6, 7}));
  REQUIRE_ERROR(nn::save_safetensors(path, b, {{"v", "2"}}),
                "write_file_atomic: cannot create " + tmp);
  REQUIRE(read_bytes(path) == before);
  fs::remove(tmp);
  nn::save_safetensors(path, b, {{"v", "2"}});
  REQUIRE(nn::load_safetensors(path).metadata.at("v") == "2");
}

// ---- training resume ---------------------------------------------------------------------------

namespace {

// Linear(6, 16) -> ReLU -> Dropout(0.25) -> Linear(16, 3); AdamW with a no-decay group for the
// biases; cosine schedule with warmup. x (8, 6) ~ randn and targets ~ randint, both drawn from
// the global generator like dropout's masks, so the generator's state is part of the run.
struct Run {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<nn::AdamW> opt;
  std::unique_ptr<nn::CosineWithWarmupLR> sched;
  explicit Run(uint64_t seed) {
    manual_seed(seed);
    model =
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::TensorModule>>{
            std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::Dropout>(0.25), std::make_shared<nn::Linear>(16, 3)});
    std::vector<Tensor> decay, no_decay;
    for (auto& [name, p] : model->named_parameters())
      (p.dim() >= 2 ? decay : no_decay).push_back(p);
    opt = std::make_unique<nn::AdamW>(
        std::vector<nn::ParamGroup>{nn::ParamGroup(decay),
                                    nn::ParamGroup(no_decay, {{"weight_decay", 0.0}})},
        nn::AdamWOptions(1e-2));
    sched = std::make_unique<nn::CosineWithWarmupLR>(*opt, 5, 40, 0.1);
  }
  double step() {
    Tensor x = randn({8, 6}), y = randint(0, 3, {8});
    opt->zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
    sched->step();
    return loss.item<double>();
  }
  void steps(int n, std::vector<double>& losses) {
    for (int i = 0; i < n; ++i) losses.push_back(step());
  }
};

std::string loss_bits(const std::vector<double>& v) {
  std::string s;
  for (double d : v) s += fmt::format("{:a}\n", d);
  return s;
}

}  // namespace

TEST_CASE("training resumes bit for bit from a checkpoint", "[checkpoint]") {
  TempDir dir;
  std::vector<double> straight, resumed;
  Run a(1234);
  a.steps(40, straight);

  Run b(1234);
  b.steps(20, resumed);
  nn::save_checkpoint(dir / "ckpt", *b.model, *b.opt, b.sched.get(), 20, {{"note", "half way"}});
  Run c(999);  // fresh objects, different weights and generator state
  nn::CheckpointInfo info = nn::load_checkpoint(dir / "ckpt", *c.model, *c.opt, c.sched.get());
  REQUIRE(info.step == 20);
  REQUIRE(info.extra == nn::Metadata{{"note", "half way"}});
  REQUIRE(info.run_id.size() == 16);
  REQUIRE(c.sched->last_epoch() == 20);
  c.steps(20, resumed);
  REQUIRE(loss_bits(resumed) == loss_bits(straight));
  require_same(c.model->state_dict(), a.model->state_dict());
  REQUIRE(straight.back() < straight.front());  // it trained
}

TEST_CASE("checkpoint pairs: an interrupted save and mismatched objects are refused",
          "[checkpoint]") {
  TempDir dir;
  const std::string ck = dir / "ckpt";
  Run a(7);
  std::vector<double> l;
  a.steps(3, l);
  nn::save_checkpoint(ck, *a.model, *a.opt, a.sched.get(), 3);
  a.steps(2, l);
  // Crash after the model file was replaced, before the training state was.
  const std::string tmp = nn::checkpoint_state_path(ck) + ".tmp." + std::to_string(::getpid());
  fs::create_directory(tmp);
  REQUIRE_ERROR(nn::save_checkpoint(ck, *a.model, *a.opt, a.sched.get(), 5),
                "write_file_atomic: cannot create");
  fs::remove(tmp);
  Run b(8);
  const std::string before = raw(b.model->state_dict().at("0.weight"));
  REQUIRE_ERROR(nn::load_checkpoint(ck, *b.model, *b.opt, b.sched.get()),
                "load_checkpoint: " + ck + ": model.safetensors (run ");
  REQUIRE_ERROR(nn::load_checkpoint(ck, *b.model, *b.opt, b.sched.get()),
                ", step 5) and training_state.safetensors (run ");
  REQUIRE_ERROR(nn::load_checkpoint(ck, *b.model, *b.opt, b.sched.get()),
                ", step 3) do not belong together (was a save interrupted?)");
  REQUIRE(raw(b.model->state_dict().at("0.weight")) == before);

  nn::save_checkpoint(ck, *a.model, *a.opt, a.sched.get(), 5);
  REQUIRE_ERROR(nn::load_checkpoint(ck, *b.model, *b.opt, nullptr),
                "the checkpoint has scheduler state but no scheduler was given");
  REQUIRE_ERROR(nn::save_checkpoint(ck, *a.model, *a.opt, nullptr, 5, {{"tapegrad.x", "1"}}),
                "extra key \"tapegrad.x\" uses the reserved prefix");
  // A model of another shape: the error names the tensor, and the optimizer is put back.
  auto other =
      std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::TensorModule>>{
          std::make_shared<nn::Linear>(6, 15), std::make_shared<nn::ReLU>(),
          std::make_shared<nn::Dropout>(0.25), std::make_shared<nn::Linear>(16, 3)});
  REQUIRE_ERROR(nn::load_checkpoint(ck, *other, *b.opt, b.sched.get()),
                "shape mismatch for 0.weight: checkpoint (16,6), model (15,6)");
  REQUIRE(b.opt->state_dict().state.empty());
  REQUIRE(b.sched->last_epoch() == 0);
  // A different scheduler (StepLR where a cosine schedule was saved) is noticed.
  nn::StepLR step_lr(*b.opt, 2);
  REQUIRE_ERROR(nn::load_checkpoint(ck, *b.model, *b.opt, &step_lr),
                "it is not the scheduler that was saved");
  // A different optimizer kind.
  std::vector<Tensor> ps = b.model->parameters();
  nn::SGD sgd(ps);
  nn::CosineWithWarmupLR sgd_sched(sgd, 5, 40, 0.1);
  REQUIRE_ERROR(nn::load_checkpoint(ck, *b.model, sgd, &sgd_sched),
                "training_state.safetensors: SGD.load_state_dict: state is for a AdamW optimizer");
  // The intact pair loads.
  nn::load_checkpoint(ck, *b.model, *b.opt, b.sched.get());
  require_same(b.model->state_dict(), a.model->state_dict());
}

// ---- the same resume across processes ----------------------------------------------------------
// The parent re-executes this test binary three times on the hidden test below ("straight": 40
// steps; "phase1": 20 steps then save_checkpoint; "phase2": a fresh process loads the checkpoint
// and runs 20 more), passing the phase and a directory through the environment; each child
// writes its losses (hex floats) and final weights there.

TEST_CASE("resume child (run by the cross-process test)", "[.][resume_child]") {
  const char* phase = std::getenv("TG_RESUME_PHASE");
  const char* d = std::getenv("TG_RESUME_DIR");
  REQUIRE(phase);
  REQUIRE(d);
  const std::string dir = d, ph = phase;
  std::vector<double> losses;
  Run r(ph == "phase2" ? 999 : 1234);
  if (ph == "phase2") nn::load_checkpoint(dir + "/ckpt", *r.model, *r.opt, r.sched.get());
  r.steps(ph == "straight" ? 40 : 20, losses);
  if (ph == "phase1") nn::save_checkpoint(dir + "/ckpt", *r.model, *r.opt, r.sched.get(), 20);
  write_bytes(dir + "/" + ph + ".losses", loss_bits(losses));
  nn::save_safetensors(dir + "/" + ph + ".final.safetensors", r.model->state_dict());
}

namespace {
int run_child(const std::string& phase, const std::string& dir) {
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.push_back("TG_RESUME_PHASE=" + phase);
  env_s.push_back("TG_RESUME_DIR=" + dir);
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", test = "resume child (run by the cross-process test)";
  char* argv[] = {exe.data(), test.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  std::string log = dir + "/" + phase + ".log";
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST_CASE("training resumes bit for bit in a fresh process", "[checkpoint]") {
  TempDir dir;
  for (const char* phase : {"straight", "phase1", "phase2"}) {
    int rc = run_child(phase, dir.path);
    INFO(read_bytes(dir / (std::string(phase) + ".log")));
    REQUIRE(rc == 0);
  }
  std::string straight = read_bytes(dir / "straight.losses");
  REQUIRE(std::count(straight.begin(), straight.end(), '\n') == 40);
  REQUIRE(read_bytes(dir / "phase1.losses") + read_bytes(dir / "phase2.losses") == straight);
  require_same(nn::load_safetensors(dir / "phase2.final.safetensors").tensors,
               nn::load_safetensors(dir / "straight.final.safetensors").tensors);
}
