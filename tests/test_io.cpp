// Array I/O (kiln/io.h): .npy, .npz, .safetensors and .gguf round trips for every dtype and
// layout, the exact bytes NumPy expects, lazy loads, and bad input: every malformed header,
// truncation and bit flip either throws a std::exception or loads, never crashes.
// Interoperability with NumPy, safetensors and gguf is checked in python/tests/test_load.py.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "kiln/half_types.h"
#include "kiln/io.h"
#include "kiln/io/zip.h"
#include "test_utils.h"

using namespace kiln;

namespace {

std::string tmp_path(const std::string& name) {
  static const std::filesystem::path dir = [] {
    auto d =
        std::filesystem::temp_directory_path() / ("kiln_test_io_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return (dir / name).string();
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The elements of `a` in row-major order, as bytes (any layout; evaluates).
std::string row_major_bytes(array a) {
  a.eval();
  std::string out(a.nbytes(), '\0');
  const char* p = a.data<char>();
  for (size_t i = 0; i < a.size(); ++i) {
    std::memcpy(out.data() + i * a.itemsize(), p + test::elem_to_loc_ref(i, a) * a.itemsize(),
                a.itemsize());
  }
  return out;
}

void expect_same(const array& got, const array& want, const std::string& what = "") {
  EXPECT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  if (got.shape() == want.shape() && got.dtype() == want.dtype()) {
    EXPECT_EQ(row_major_bytes(got), row_major_bytes(want)) << what;
  }
}

array fresh(const Shape& shape, Dtype d) {
  if (is_integral(d) || d == bool_) return test::random_array(shape, d, 0.0, 120.0);
  return test::random_array(shape, d, -100.0, 100.0);
}

const std::vector<Shape> kShapes = {{}, {0}, {1}, {7}, {3, 4}, {2, 0, 3}, {4, 6, 3, 1, 2}};

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_THROW_WITH(stmt, type, text)                                       \
  do {                                                                            \
    try {                                                                         \
      stmt;                                                                       \
      ADD_FAILURE() << "no exception from " #stmt;                                \
    } catch (const type& e) {                                                     \
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what(); \
    } catch (const std::exception& e) {                                           \
      ADD_FAILURE() << "wrong exception type from " #stmt ": " << e.what();       \
    }                                                                             \
  } while (0)

std::shared_ptr<io::Reader> mem(std::string bytes) {
  return std::make_shared<io::MemoryReader>(std::move(bytes));
}

// A .npy file from its header dict and data bytes (version 1.0, unpadded).
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  uint32_t len = static_cast<uint32_t>(dict.size());
  if (major == 1) {
    out += static_cast<char>(len & 0xFF);
    out += static_cast<char>(len >> 8);
  } else {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((len >> (8 * i)) & 0xFF);
  }
  return out + dict + data;
}

template <typename T>
std::string le_bytes(std::initializer_list<T> vals) {
  std::string s;
  for (T v : vals) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

}  // namespace

// ---------------------------------------------------------------- .npy
TEST(IoNpy, RoundTripEveryDtypeAndShape) {
  for (Dtype d : all_dtypes) {
    for (const auto& shape : kShapes) {
      array a = fresh(shape, d);
      std::string path = tmp_path("rt.npy");
      save(path, a);
      array b = load(path);
      EXPECT_TRUE(b.has_primitive()) << "load reads lazily";
      expect_same(b, a, msg(d, " ", shape_str(shape)));
      auto w = std::make_shared<io::MemoryWriter>();
      save(w, a);
      EXPECT_EQ(w->bytes(), read_file(path));
      expect_same(load(mem(w->bytes())), a);
    }
  }
}

TEST(IoNpy, WritesNumPysHeader) {
  auto header_of = [](const array& a) {
    auto w = std::make_shared<io::MemoryWriter>();
    save(w, a);
    return w->bytes();
  };
  std::string b = header_of(zeros({3, 4}, float32));
  ASSERT_EQ(b.size(), 128u + 48u);
  EXPECT_EQ(b.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  EXPECT_EQ(b.substr(10, dict.size()), dict);
  EXPECT_EQ(b.substr(10 + dict.size(), 128 - 11 - dict.size()),
            std::string(128 - 11 - dict.size(), ' '));
  EXPECT_EQ(b[127], '\n');
  std::pair<Dtype, std::string> descrs[] = {
      {bool_, "'|b1'"},    {uint8, "'|u1'"},   {int8, "'|i1'"},
      {uint16, "'<u2'"},   {int64, "'<i8'"},   {float16, "'<f2'"},
      {bfloat16, "'<V2'"}, {float64, "'<f8'"}, {complex64, "'<c8'"}};
  for (auto& [d, s] : descrs) EXPECT_NE(header_of(zeros({2}, d)).find(s), std::string::npos) << d;
  EXPECT_NE(header_of(zeros({5}, int32)).find("'shape': (5,), }"), std::string::npos);
  EXPECT_NE(header_of(array(1.5f)).find("'shape': (), }"), std::string::npos);
  // A header past 64 KiB needs version 2.0 (a 4-byte length).
  Shape many(23000, 1);
  std::string v2 = header_of(zeros(many, uint8));
  EXPECT_EQ(v2[6], 2);
  EXPECT_EQ(load(mem(v2)).shape(), many);
}

TEST(IoNpy, NonContiguousViews) {
  array base = fresh({4, 6}, float32);
  array cube = fresh({3, 4, 5}, int16);
  std::vector<std::pair<std::string, array>> views = {
      {"transpose", transpose(base)},
      {"step slice", slice(base, {0, 1}, {4, 6}, {2, 3})},
      {"broadcast", broadcast_to(slice(base, {1, 0}, {2, 6}), {3, 4, 6})},
      {"permuted", transpose(cube, {1, 0, 2})},
      {"reversed axes 3-d", transpose(cube)},
      {"offset row", slice(base, {2, 0}, {3, 6})}};
  for (auto& [what, v] : views) {
    std::string path = tmp_path("view.npy");
    save(path, v);
    expect_same(load(path), v, what);
  }
  // A column-major array is written as it is, with fortran_order (no copy), as MLX does.
  save(tmp_path("t.npy"), transpose(base));
  EXPECT_NE(read_file(tmp_path("t.npy")).find("'fortran_order': True, 'shape': (6, 4)"),
            std::string::npos);
}

TEST(IoNpy, ReadsOtherWriters) {
  // Big-endian data is byte-swapped; versions 2.0 and 3.0; Python 2 long dims; '"' quotes.
  expect_same(load(mem(npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }\n",
                                 std::string("\0\0\0\x01\0\0\x01\0\xff\xff\xff\xfe", 12)))),
              array({1, 256, -2}, int32));
  expect_same(load(mem(npy_bytes("{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }\n",
                                 std::string("\x3f\x80\0\0\xc0\0\0\0", 8)))),
              array(std::initializer_list<complex64_t>{complex64_t(1.0f, -2.0f)}, complex64));
  expect_same(load(mem(npy_bytes("{\"descr\": \"<f8\", \"shape\": (2L,), \"fortran_order\": False}",
                                 le_bytes<double>({0.5, -3.0}), 2))),
              array({0.5, -3.0}, float64));
  expect_same(load(mem(npy_bytes("{'descr':'<u2','fortran_order':True,'shape':(2,3)}",
                                 le_bytes<uint16_t>({1, 2, 3, 4, 5, 6}), 3))),
              transpose(array({1, 2, 3, 4, 5, 6}, {3, 2}, uint16)));
  // bfloat16 as MLX writes it.
  expect_same(load(mem(npy_bytes("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }",
                                 le_bytes<uint16_t>({0x3F80, 0xC000})))),
              array({1.0f, -2.0f}, bfloat16));
}

TEST(IoNpy, Errors) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = le_bytes<float>({1.0f, 2.0f});
  EXPECT_THROW_WITH(load(tmp_path("missing.npy")), std::runtime_error,
                    "[load] Failed to open file");
  EXPECT_THROW_WITH(load(tmp_path("missing.npy")), std::runtime_error, "missing.npy");
  std::string bad_magic = npy_bytes(good, data);
  bad_magic[1] = 'X';
  EXPECT_THROW_WITH(load(mem(bad_magic)), std::runtime_error, "magic");
  std::string bad_version = npy_bytes(good, data);
  bad_version[6] = 5;
  EXPECT_THROW_WITH(load(mem(bad_version)), std::runtime_error, "version 5.0");
  for (std::string descr : {"<c16", "|O", "<U2", "<f16", "|f4", "<x4", "f4"}) {
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }";
    EXPECT_THROW_WITH(load(mem(npy_bytes(dict, data + data + data + data))), std::invalid_argument,
                      "'" + descr + "'");
  }
  for (std::string dict :
       {"{'descr': '<f4', 'fortran_order': False}",                                 // no shape
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",          // extra key
        "{'descr': '<f4', 'fortran_order': False, 'shape': (x, 4)}",                // garbage
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",                 // negative
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",                   // not a tuple
        "{'descr': '<f4', 'fortran_order': Fals, 'shape': (2,)}",                   // bad bool
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk",           // trailing
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",  // twice
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,)}"}) {     // > int32
    EXPECT_THROW_WITH(load(mem(npy_bytes(dict, data))), std::runtime_error, "[load]");
  }
  // Data shorter than the shape says: an error at load(), naming the sizes.
  EXPECT_THROW_WITH(load(mem(npy_bytes(good, data.substr(0, 6)))), std::runtime_error,
                    "needs 8 bytes");
  // A header length beyond the file.
  std::string long_header = npy_bytes(good, data);
  long_header[8] = '\xff';
  long_header[9] = '\x7f';
  EXPECT_THROW_WITH(load(mem(long_header)), std::runtime_error, "claims 32767 bytes");
  EXPECT_THROW_WITH(load(mem("\x93NUM")), std::runtime_error, "[load]");
  EXPECT_THROW_WITH(load(mem("")), std::runtime_error, "[load]");
}

TEST(IoNpy, LazyLoadsSurviveTheFileBeingReplaced) {
  array a = fresh({64, 3}, float32), other = fresh({5}, int64);
  std::string path = tmp_path("replaced.npy");
  save(path, a);
  array lazy = load(path);
  ASSERT_TRUE(lazy.has_primitive());
  save(path, other);  // written to a new file and renamed over the old one
  expect_same(lazy, a, "reads the file it was loaded from");
  expect_same(load(path), other);
  // Saving a computation over a lazy load of the same path reads before replacing.
  save(path, multiply(load(path), array(int64_t(3))));
  expect_same(load(path), multiply(other, array(int64_t(3))));
  save(tmp_path("noext"), a);  // ".npy" appended, as MLX does
  expect_same(load(tmp_path("noext.npy")), a);
}

TEST(IoNpy, LoadOnAGpuStream) {
  if (!is_available(Device::gpu)) GTEST_SKIP() << "no GPU";
  array a = fresh({33, 7}, bfloat16);
  save(tmp_path("gpu.npy"), a);
  array b = load(tmp_path("gpu.npy"), Device::gpu);
  expect_same(add(b, zeros_like(b), Device::gpu), a);
}

// ---------------------------------------------------------------- .npz
TEST(IoNpz, RoundTripStoredAndDeflated) {
  std::vector<std::pair<std::string, array>> arrays;
  for (Dtype d : all_dtypes) arrays.emplace_back(msg("a_", d), fresh({3, 5}, d));
  arrays.emplace_back("scalar", array(2.5f));
  arrays.emplace_back("empty", zeros({0, 4}, int32));
  arrays.emplace_back("fortran", transpose(fresh({4, 6}, float64)));
  arrays.emplace_back("strided", slice(fresh({9, 9}, uint16), {0, 0}, {9, 9}, {2, 4}));
  arrays.emplace_back("name/with.dots", fresh({2}, float32));
  for (bool compressed : {false, true}) {
    std::string path = tmp_path(compressed ? "c" : "u");
    savez(path, arrays, compressed);
    auto loaded = load_npz(path + ".npz");
    ASSERT_EQ(loaded.size(), arrays.size());
    for (auto& [name, a] : arrays) {
      ASSERT_TRUE(loaded.count(name)) << name;
      expect_same(loaded.at(name), a, name);
    }
  }
  EXPECT_THROW_WITH(savez(tmp_path("dup"), {{"x", array(1)}, {"x", array(2)}}),
                    std::invalid_argument, "'x'");
}

TEST(IoNpz, EveryMemberIsChecked) {
  auto w = std::make_shared<io::MemoryWriter>();
  array a = fresh({100}, float32);
  savez(w, {{"a", a}}, false);
  std::string bytes = w->bytes();
  // A flipped data bit in a stored member: the CRC-32 catches it.
  size_t data_at = bytes.find("\x93NUMPY") + 128 + 40;
  std::string flipped = bytes;
  flipped[data_at] ^= 0x10;
  EXPECT_THROW_WITH(load_npz(mem(flipped)), std::runtime_error, "CRC-32 mismatch");
  // Deflated: zlib or the CRC catches damage.
  auto wc = std::make_shared<io::MemoryWriter>();
  savez(wc, {{"a", a}}, true);
  std::string c = wc->bytes();
  for (size_t p = 40; p < 300; p += 7) {
    std::string f = c;
    f[p] ^= 0x04;
    std::string e = error_of([&] {
      auto m = load_npz(mem(f));
      if (m.count("a")) expect_same(m.at("a"), a);
    });
    if (!e.empty()) {
      EXPECT_NE(e.find("[load]"), std::string::npos) << e;
    }
  }
  EXPECT_THROW_WITH(load_npz(mem(bytes.substr(0, bytes.size() - 3))), std::invalid_argument, "zip");
  EXPECT_THROW_WITH(load_npz(mem("PK\x03\x04 not a zip at all, really not")), std::invalid_argument,
                    "zip");
  EXPECT_THROW_WITH(load_npz(tmp_path("missing.npz")), std::invalid_argument, "Failed to open");
}

TEST(IoNpz, Zip64Records) {
  // Force every zip64 field (sizes, offsets, end records) on a small archive.
  uint64_t old = io::set_zip64_threshold(0);
  std::vector<std::pair<std::string, array>> arrays = {{"x", fresh({10, 3}, int32)},
                                                       {"y", fresh({7}, complex64)}};
  std::string path = tmp_path("z64.npz");
  for (bool compressed : {false, true}) {
    savez(path, arrays, compressed);
    auto loaded = load_npz(path);
    for (auto& [name, a] : arrays) expect_same(loaded.at(name), a, name);
    std::string bytes = read_file(path);
    EXPECT_NE(bytes.find(std::string("PK\x06\x06", 4)), std::string::npos) << "zip64 end record";
    // Python's zipfile (standard library) reads and CRC-checks it too.
    std::string cmd =
        "python3 -c \"import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); "
        "sys.exit(z.testzip() is not None or sorted(z.namelist())!=['x.npy','y.npy'])\" " +
        path + " 2>&1";
    if (std::system("python3 -c pass > /dev/null 2>&1") == 0) {
      EXPECT_EQ(std::system(cmd.c_str()), 0);
    }
  }
  io::set_zip64_threshold(old);
}

// ---------------------------------------------------------------- .safetensors
TEST(IoSafetensors, RoundTripEveryDtype) {
  std::unordered_map<std::string, array> arrays;
  for (Dtype d : all_dtypes) {
    for (size_t i = 0; i < kShapes.size(); ++i)
      arrays.emplace(msg(d, "_", i), fresh(kShapes[i], d));
  }
  arrays.emplace("transposed", transpose(fresh({3, 5}, float32)));
  arrays.emplace("broadcast", broadcast_to(fresh({1, 5}, int8), {4, 5}));
  std::unordered_map<std::string, std::string> meta = {
      {"format", "kiln"}, {"note", "ünïcode ✓"}, {"", ""}};
  std::string path = tmp_path("rt.safetensors");
  save_safetensors(path, arrays, meta);
  auto [loaded, loaded_meta] = load_safetensors(path);
  EXPECT_EQ(loaded_meta, meta);
  ASSERT_EQ(loaded.size(), arrays.size());
  for (auto& [name, a] : arrays) {
    ASSERT_TRUE(loaded.count(name)) << name;
    EXPECT_TRUE(loaded.at(name).has_primitive());
    expect_same(loaded.at(name), a, name);
  }
  // The header is padded to 8 bytes and each tensor starts at a multiple of its item size.
  std::string bytes = read_file(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  std::string header = bytes.substr(8, n);
  std::regex entry("\\{\"data_offsets\":\\[(\\d+),(\\d+)\\],\"dtype\":\"(\\w+)\"");
  int checked = 0;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), entry);
       it != std::sregex_iterator(); ++it) {
    std::string dt = (*it)[3];
    size_t item = dt == "BOOL" || dt == "U8" || dt == "I8" ? 1
                  : dt.find("16") != std::string::npos     ? 2
                  : dt.find("32") != std::string::npos     ? 4
                                                           : 8;
    EXPECT_EQ(std::stoull((*it)[1]) % item, 0u) << dt;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(arrays.size()));
  // Without metadata there is no __metadata__ entry.
  save_safetensors(path, {{"a", array(1.0f)}});
  EXPECT_EQ(read_file(path).find("__metadata__"), std::string::npos);
  EXPECT_TRUE(load_safetensors(path).second.empty());
  save_safetensors(tmp_path("st_noext"), {{"a", array(1.0f)}});
  EXPECT_EQ(load_safetensors(tmp_path("st_noext.safetensors")).first.size(), 1u);
}

TEST(IoSafetensors, Errors) {
  auto st = [](const std::string& header, const std::string& data) {
    std::string out;
    uint64_t n = header.size();
    out.append(reinterpret_cast<const char*>(&n), 8);
    return out + header + data;
  };
  const std::string data = le_bytes<float>({1, 2, 3, 4, 5, 6});
  auto load_st = [](const std::string& bytes) {
    auto m = load_safetensors(mem(bytes)).first;
    for (auto& [k, v] : m) v.eval();
  };
  const std::string ok = R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  load_st(st(ok, data));
  EXPECT_THROW_WITH(load_st(st(ok, data.substr(0, 20))), std::runtime_error,
                    "(0, 24) beyond the 20 bytes");
  EXPECT_THROW_WITH(
      load_st(st(R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", data)),
      std::runtime_error, "invalid data offsets (0, 20)");
  EXPECT_THROW_WITH(
      load_st(st(R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[24,0]}})", data)),
      std::runtime_error, "(24, 0)");
  EXPECT_THROW_WITH(
      load_st(st(R"({"x":{"dtype":"F99","shape":[2,3],"data_offsets":[0,24]}})", data)),
      std::runtime_error, "'F99'");
  EXPECT_THROW_WITH(
      load_st(st(R"({"x":{"dtype":"F32","shape":[-2,3],"data_offsets":[0,24]}})", data)),
      std::runtime_error, "-2");
  EXPECT_THROW_WITH(load_st(st(R"({"x":{"dtype":"F32","shape":[2,3]}})", data)), std::runtime_error,
                    "data_offsets");
  EXPECT_THROW_WITH(load_st(st(R"({"x":{"dtype":5,"shape":[2,3],"data_offsets":[0,24]}})", data)),
                    std::runtime_error, "dtype");
  EXPECT_THROW_WITH(
      load_st(st(R"({"x":{"dtype":"F32","shape":[2.5],"data_offsets":[0,24]}})", data)),
      std::runtime_error, "2.5");
  EXPECT_THROW_WITH(
      load_st(st(R"({"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,-24]}})", data)),
      std::runtime_error, "data_offsets");
  EXPECT_THROW_WITH(load_st(st(R"({"__metadata__":{"a":1}})", "")), std::runtime_error,
                    "not a string");
  EXPECT_THROW_WITH(load_st(st("{not json}", data)), std::runtime_error, "not valid JSON");
  EXPECT_THROW_WITH(load_st(st("[1,2]", data)), std::runtime_error, "not a JSON object");
  std::string huge = st(ok, data);
  huge[5] = 1;  // a header length of 2^40 and more
  EXPECT_THROW_WITH(load_st(huge), std::runtime_error, "Invalid JSON header length");
  EXPECT_THROW_WITH(load_st("abcd"), std::runtime_error, "too few");
  EXPECT_THROW_WITH(load_safetensors(tmp_path("missing.safetensors")), std::runtime_error,
                    "Failed to open file");
  EXPECT_THROW_WITH(save_safetensors(tmp_path("m.safetensors"), {{"__metadata__", array(1)}}),
                    std::invalid_argument, "__metadata__");
  // F8_E4M3 loads as its raw bytes (uint8), as MLX.
  auto f8 = load_safetensors(mem(st(R"({"t":{"dtype":"F8_E4M3","shape":[3],"data_offsets":[0,3]}})",
                                    std::string("\x00\x7f\xb6", 3))))
                .first.at("t");
  expect_same(f8, array({0, 127, 182}, uint8));
}

// ---------------------------------------------------------------- .gguf
TEST(IoGguf, RoundTripTensorsAndEveryMetadataType) {
  std::unordered_map<std::string, array> arrays;
  for (Dtype d : {float32, float16, bfloat16, float64, int8, int16, int32, int64}) {
    for (size_t i = 0; i < kShapes.size(); ++i)
      arrays.emplace(msg(d, "_", i), fresh(kShapes[i], d));
  }
  arrays.emplace("transposed", transpose(fresh({3, 5}, float32)));
  std::unordered_map<std::string, GGUFMetaData> meta;
  for (Dtype d :
       {uint8, int8, uint16, int16, uint32, int32, uint64, int64, float32, float64, bool_}) {
    meta.emplace(msg("scalar.", d), fresh({}, d));
    meta.emplace(msg("list.", d), fresh({5}, d));
  }
  meta.emplace("empty.list", zeros({0}, int32));
  meta.emplace("text", std::string("hello gguf"));
  meta.emplace("strings", std::vector<std::string>{"a", "", "ccc"});
  meta.emplace("no.strings", std::vector<std::string>{});
  std::string path = tmp_path("rt.gguf");
  save_gguf(path, arrays, meta);
  auto [loaded, loaded_meta] = load_gguf(path);
  ASSERT_EQ(loaded.size(), arrays.size());
  for (auto& [name, a] : arrays) {
    ASSERT_TRUE(loaded.count(name)) << name;
    expect_same(loaded.at(name), a, name);
  }
  ASSERT_EQ(loaded_meta.size(), meta.size());
  for (auto& [k, v] : meta) {
    ASSERT_TRUE(loaded_meta.count(k)) << k;
    const auto& got = loaded_meta.at(k);
    if (auto* a = std::get_if<array>(&v)) {
      ASSERT_TRUE(std::holds_alternative<array>(got)) << k;
      expect_same(std::get<array>(got), *a, k);
    } else if (auto* str = std::get_if<std::string>(&v)) {
      ASSERT_TRUE(std::holds_alternative<std::string>(got)) << k;
      EXPECT_EQ(std::get<std::string>(got), *str);
    } else {
      ASSERT_TRUE(std::holds_alternative<std::vector<std::string>>(got)) << k;
      EXPECT_EQ(std::get<std::vector<std::string>>(got), std::get<std::vector<std::string>>(v));
    }
  }
  // The file is GGUF 3 with 32-byte aligned data.
  std::string bytes = read_file(path);
  EXPECT_EQ(bytes.substr(0, 8), std::string("GGUF\x03\0\0\0", 8));
  save_gguf(tmp_path("gg_noext"), {{"a", array(1.0f)}});
  EXPECT_EQ(load_gguf(tmp_path("gg_noext.gguf")).first.size(), 1u);
}

TEST(IoGguf, SaveErrors) {
  std::string p = tmp_path("bad.gguf");
  for (Dtype d : {bool_, uint8, uint16, uint32, uint64, complex64}) {
    EXPECT_THROW_WITH(save_gguf(p, {{"a", zeros({2}, d)}}), std::runtime_error,
                      msg("[save_gguf] dtype ", d, " is not supported"));
  }
  for (Dtype d : {float16, bfloat16, complex64}) {
    EXPECT_THROW_WITH(save_gguf(p, {{"a", zeros({2})}}, {{"m", GGUFMetaData(zeros({2}, d))}}),
                      std::invalid_argument, "not supported for metadata");
  }
  EXPECT_THROW_WITH(save_gguf(p, {{"a", zeros({2})}}, {{"m", GGUFMetaData(zeros({2, 2}))}}),
                    std::runtime_error, "0-d or 1-d");
  EXPECT_THROW_WITH(save_gguf(p, {{"deep", zeros(Shape(9, 1))}}), std::invalid_argument,
                    "'deep' has 9 dimensions");
}

namespace {
// A GGUF file with one tensor of GGML type `type`, dims in GGML order, and raw `data`.
std::string gguf_bytes(uint32_t type, std::vector<uint64_t> ggml_dims, const std::string& data,
                       const std::string& name = "blk.weight", uint32_t version = 3) {
  std::string h("GGUF", 4);
  auto u32 = [&](uint32_t v) { h.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { h.append(reinterpret_cast<const char*>(&v), 8); };
  u32(version);
  u64(1);
  u64(0);
  u64(name.size());
  h += name;
  u32(static_cast<uint32_t>(ggml_dims.size()));
  for (auto d : ggml_dims) u64(d);
  u32(type);
  u64(0);
  h.append((32 - h.size() % 32) % 32, '\0');
  return h + data;
}

// Unpacks kiln's (MLX's) quantized layout back into values: scale * q + bias per group of 32.
std::vector<double> dequantize_ref(const array& w, const array& scales, const array& biases,
                                   int bits) {
  std::string wb = row_major_bytes(w);
  std::vector<double> s = test::to_double(scales), b = test::to_double(biases);
  size_t n = wb.size() * 8 / bits;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    unsigned q = bits == 8 ? static_cast<uint8_t>(wb[i])
                           : (static_cast<uint8_t>(wb[i / 2]) >> (4 * (i % 2))) & 0xF;
    out[i] = s[i / 32] * q + b[i / 32];
  }
  return out;
}

std::string random_bytes(size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(test::rng()() & 0xFF);
  return s;
}

// A float16 scale with a sane magnitude (random bytes could be inf or NaN).
std::string half_bytes(float f) {
  uint16_t h = detail::float_to_half_bits(f);
  return std::string(reinterpret_cast<const char*>(&h), 2);
}
}  // namespace

TEST(IoGguf, QuantizedTensorsLoadAsMLXDoes) {
  // Two rows of 256 values (GGML dims {256, 2}); references from GGML's block definitions.
  const int rows = 2, cols = 256;
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  struct Case {
    uint32_t type;
    int block_bytes, bits;
  };
  for (Case c : {Case{2, 18, 4}, Case{3, 20, 4}, Case{8, 34, 8}, Case{12, 144, 4}}) {
    int block = c.type == 12 ? 256 : 32;
    std::string data;
    std::vector<double> want, ggml, slack;
    for (int b = 0; b < rows * cols / block; ++b) {
      float d = u(test::rng()), m = u(test::rng());
      if (c.type == 2) {  // Q4_0: x = d * (q - 8); q[j] low nibbles, q[j+16] high nibbles
        std::string qs = random_bytes(16);
        data += half_bytes(d) + qs;
        double dh = detail::half_bits_to_float(detail::float_to_half_bits(d));
        for (int j = 0; j < 32; ++j) {
          int q = j < 16 ? (uint8_t(qs[j]) & 0xF) : (uint8_t(qs[j - 16]) >> 4);
          want.push_back(dh * (q - 8));
        }
      } else if (c.type == 3) {  // Q4_1: x = d * q + m
        std::string qs = random_bytes(16);
        data += half_bytes(d) + half_bytes(m) + qs;
        double dh = detail::half_bits_to_float(detail::float_to_half_bits(d));
        double mh = detail::half_bits_to_float(detail::float_to_half_bits(m));
        for (int j = 0; j < 32; ++j) {
          int q = j < 16 ? (uint8_t(qs[j]) & 0xF) : (uint8_t(qs[j - 16]) >> 4);
          want.push_back(dh * q + mh);
        }
      } else if (c.type == 8) {  // Q8_0: x = d * q, q int8
        std::string qs = random_bytes(32);
        data += half_bytes(d) + qs;
        double dh = detail::half_bits_to_float(detail::float_to_half_bits(d));
        for (int j = 0; j < 32; ++j) want.push_back(dh * static_cast<int8_t>(qs[j]));
      } else {  // Q4_K: ggml's dequantize_row_q4_K
        std::string sc = random_bytes(12), qs = random_bytes(128);
        data += half_bytes(d) + half_bytes(m) + sc + qs;
        double dh = detail::half_bits_to_float(detail::float_to_half_bits(d));
        double mh = detail::half_bits_to_float(detail::float_to_half_bits(m));
        auto scale_min = [&](int j, int& s, int& mn) {
          const auto* q = reinterpret_cast<const uint8_t*>(sc.data());
          if (j < 4) {
            s = q[j] & 63;
            mn = q[j + 4] & 63;
          } else {
            s = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
            mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
          }
        };
        // MLX (and kiln) round d * scale and dmin * min to float16; ggml keeps them in
        // float32, so ggml's values are checked within that rounding (`slack`).
        auto f16 = [](double x) {
          return static_cast<double>(
              detail::half_bits_to_float(detail::float_to_half_bits(static_cast<float>(x))));
        };
        for (int j = 0; j < 4; ++j) {
          for (int half = 0; half < 2; ++half) {
            int sv, mv;
            scale_min(2 * j + half, sv, mv);
            for (int l = 0; l < 32; ++l) {
              uint8_t byte = uint8_t(qs[32 * j + l]);
              int q = half == 0 ? (byte & 0xF) : (byte >> 4);
              want.push_back(f16(dh * sv) * q - f16(mh * mv));
              ggml.push_back(dh * sv * q - mh * mv);
              slack.push_back(1e-3 * (std::abs(dh * sv * q) + std::abs(mh * mv)) + 1e-6);
            }
          }
        }
      }
    }
    ASSERT_EQ(data.size(), size_t(rows * cols / block * c.block_bytes));
    auto loaded = load_gguf(mem(gguf_bytes(c.type, {cols, rows}, data))).first;
    ASSERT_EQ(loaded.size(), 3u);
    const array& w = loaded.at("blk.weight");
    EXPECT_EQ(w.dtype(), uint32);
    EXPECT_EQ(w.shape(), (Shape{rows, cols * c.bits / 32}));
    EXPECT_EQ(loaded.at("blk.scales").shape(), (Shape{rows, cols / 32}));
    EXPECT_EQ(loaded.at("blk.biases").dtype(), float16);
    auto got = dequantize_ref(w, loaded.at("blk.scales"), loaded.at("blk.biases"), c.bits);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "type " << c.type << " element " << i;
      if (!ggml.empty()) {
        ASSERT_NEAR(got[i], ggml[i], slack[i]) << "Q4_K element " << i;
      }
    }
  }
  // Other quantized types are named in the error; a short last dimension is refused.
  EXPECT_THROW_WITH(load_gguf(mem(gguf_bytes(14, {256, 1}, std::string(210, '\0')))),
                    std::runtime_error, "Q6_K");
  EXPECT_THROW_WITH(load_gguf(mem(gguf_bytes(2, {16, 1}, std::string(18, '\0')))),
                    std::runtime_error, "multiple of the block size 32");
}

TEST(IoGguf, LoadErrors) {
  std::string ok = gguf_bytes(0, {4}, le_bytes<float>({1, 2, 3, 4}), "t");
  expect_same(load_gguf(mem(ok)).first.at("t"), array({1.0f, 2.0f, 3.0f, 4.0f}));
  std::string bad = ok;
  bad[0] = 'X';
  EXPECT_THROW_WITH(load_gguf(mem(bad)), std::runtime_error, "not a GGUF file");
  EXPECT_THROW_WITH(load_gguf(mem(gguf_bytes(0, {4}, le_bytes<float>({1, 2, 3, 4}), "t", 1))),
                    std::runtime_error, "version 1");
  bad = ok;
  std::swap(bad[4], bad[7]);  // version 3 written big-endian
  EXPECT_THROW_WITH(load_gguf(mem(bad)), std::runtime_error, "big-endian");
  EXPECT_THROW_WITH(load_gguf(mem(ok.substr(0, ok.size() - 1))), std::runtime_error,
                    "outside the 15 bytes");
  bad = ok;
  bad[8] = '\x7f';  // tensor count
  EXPECT_THROW_WITH(load_gguf(mem(bad)), std::runtime_error, "tensors");
  EXPECT_THROW_WITH(load_gguf(mem(gguf_bytes(0, {1ull << 40}, ""))), std::runtime_error,
                    "dimension");
  EXPECT_THROW_WITH(load_gguf(mem(gguf_bytes(99, {4}, ""))), std::runtime_error, "unknown (99)");
  // Rank: 8 loads (gguflib's and MLX's limit), 9 and a hostile 2^31 are refused before reading.
  auto ones = [](size_t n) { return std::vector<uint64_t>(n, 1); };
  EXPECT_EQ(
      load_gguf(mem(gguf_bytes(0, ones(8), le_bytes<float>({5})))).first.at("blk.weight").ndim(),
      8u);
  EXPECT_THROW_WITH(load_gguf(mem(gguf_bytes(0, ones(9), le_bytes<float>({5})))),
                    std::runtime_error, "9 dimensions; GGUF holds at most 8");
  std::string huge = gguf_bytes(0, {4}, le_bytes<float>({1, 2, 3, 4}), "t");
  uint32_t rank = 1u << 31;
  std::memcpy(huge.data() + 24 + 8 + 1, &rank, 4);  // header 24, name length 8, name "t"
  EXPECT_THROW_WITH(load_gguf(mem(huge)), std::runtime_error, "2147483648 dimensions");
  EXPECT_THROW_WITH(load_gguf(tmp_path("missing.gguf")), std::invalid_argument,
                    "Failed to open file");
  for (size_t n = 0; n < 24; ++n)
    EXPECT_THROW(load_gguf(mem(ok.substr(0, n))), std::runtime_error) << n;
}

// ---------------------------------------------------------------- corrupt files
namespace {
// Loads `bytes` in `format` and evaluates everything; returns the arrays (names sorted).
std::map<std::string, array> load_all(const std::string& format, const std::string& bytes) {
  std::map<std::string, array> out;
  if (format == "npy") {
    out.emplace("", load(mem(bytes)));
  } else if (format == "npz") {
    for (auto& [k, v] : load_npz(mem(bytes))) out.emplace(k, v);
  } else if (format == "safetensors") {
    for (auto& [k, v] : load_safetensors(mem(bytes)).first) out.emplace(k, v);
  } else {
    auto g = load_gguf(mem(bytes));
    for (auto& [k, v] : g.first) out.emplace(k, v);
    for (auto& [k, v] : g.second) {
      if (auto* a = std::get_if<array>(&v)) out.emplace("meta:" + k, *a);
    }
  }
  for (auto& [k, v] : out) v.eval();
  return out;
}

bool same_arrays(const std::map<std::string, array>& a, const std::map<std::string, array>& b) {
  if (a.size() != b.size()) return false;
  for (auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second.shape() != v.shape() || it->second.dtype() != v.dtype() ||
        row_major_bytes(it->second) != row_major_bytes(v)) {
      return false;
    }
  }
  return true;
}
}  // namespace

TEST(IoFuzz, TruncatedAndBitFlippedFilesThrowOrLoad) {
  std::map<std::string, std::string> files;
  {
    auto w = std::make_shared<io::MemoryWriter>();
    save(w, fresh({5, 3}, float32));
    files["npy"] = w->bytes();
    for (bool c : {false, true}) {
      auto z = std::make_shared<io::MemoryWriter>();
      savez(z, {{"a", fresh({4}, int16)}, {"b", fresh({2, 2}, float64)}}, c);
      files[c ? "npz" : "npz-stored"] = z->bytes();
    }
    auto s = std::make_shared<io::MemoryWriter>();
    save_safetensors(s, {{"a", fresh({3}, bfloat16)}, {"b", fresh({2, 2}, int32)}}, {{"k", "v"}});
    files["safetensors"] = s->bytes();
    auto g = std::make_shared<io::MemoryWriter>();
    save_gguf(g, {{"a", fresh({3}, float16)}, {"b", fresh({2, 2}, int32)}},
              {{"s", std::string("x")},
               {"n", GGUFMetaData(fresh({3}, uint16))},
               {"l", std::vector<std::string>{"p", "q"}}});
    files["gguf"] = g->bytes();
  }
  size_t loads = 0, threw = 0;
  for (auto& [name, bytes] : files) {
    std::string format = name == "npz-stored" ? "npz" : name;
    auto original = load_all(format, bytes);
    // Every truncation: an error, or (cutting only padding) the original arrays.
    for (size_t n = 0; n < bytes.size(); ++n) {
      ++loads;
      try {
        auto got = load_all(format, bytes.substr(0, n));
        EXPECT_TRUE(same_arrays(got, original))
            << name << " truncated to " << n << " loaded other data";
      } catch (const std::exception& e) {
        ++threw;
        EXPECT_NE(std::string(e.what()).find('['), std::string::npos) << e.what();
      }
    }
    // Bit flips everywhere: an error or arrays (the values the damaged file describes).
    for (size_t p = 0; p < bytes.size(); ++p) {
      std::string f = bytes;
      f[p] = static_cast<char>(f[p] ^ (1 << (test::rng()() % 8)));
      ++loads;
      try {
        load_all(format, f);
      } catch (const std::exception& e) {
        ++threw;
        EXPECT_NE(std::string(e.what()).find('['), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(threw, loads / 3);  // most damage is detected
}
