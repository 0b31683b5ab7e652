// NumPy's .npy format: load and save. The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// parsed here by a small strict reader (NumPy uses ast.literal_eval), so that a damaged
// header is an error rather than a guess.
#include "kiln/io/npy.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>

#include "kiln/ops.h"

namespace kiln {
namespace io {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// NumPy refuses headers over 10000 bytes unless asked; kiln allows more, within reason.
constexpr size_t kMaxHeader = size_t(1) << 20;

// The descr for `d`: '|' byte order for single bytes, else little-endian (as NumPy and MLX).
std::string descr_of(Dtype d) {
  std::string s = d.size == 1 ? "|" : "<";
  s += static_cast<char>(kind(d));
  s += std::to_string(static_cast<int>(d.size));
  return s;
}

Dtype dtype_of_descr(const std::string& descr, bool& big_endian, const std::string& where) {
  auto unsupported = [&]() -> Dtype {
    throw std::invalid_argument("[load] Unsupported array protocol type-string '" +
                                printable(descr) + "' in " + where +
                                "; kiln reads b1, u1-u8, i1-i8, f2-f8, c8 and V2 (bfloat16).");
  };
  if (descr.size() < 3) return unsupported();
  char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return unsupported();
  big_endian = order == '>';
  std::string t = descr.substr(1);
  static const std::pair<const char*, Dtype> table[] = {
      {"b1", bool_},   {"u1", uint8},   {"u2", uint16},    {"u4", uint32},  {"u8", uint64},
      {"i1", int8},    {"i2", int16},   {"i4", int32},     {"i8", int64},   {"f2", float16},
      {"f4", float32}, {"f8", float64}, {"c8", complex64}, {"V2", bfloat16}};
  for (const auto& [name, d] : table) {
    if (t == name) {
      // A multi-byte type must say its byte order ('|' is "not applicable").
      if (order == '|' && d.size > 1 && d != bfloat16) return unsupported();
      return d;
    }
  }
  return unsupported();
}

// A strict reader of the header dict: string, bool and tuple-of-int values only.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string where) : s_(text), where_(std::move(where)) {}

  NpyHeader parse() {
    NpyHeader h;
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<int64_t>> shape;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = string_literal();
      expect(':');
      if (key == "descr" && !descr) {
        descr = string_literal();
      } else if (key == "fortran_order" && !fortran) {
        fortran = bool_literal();
      } else if (key == "shape" && !shape) {
        shape = int_tuple();
      } else {
        fail("unexpected or repeated key '" + printable(key) + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_ws();
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the dict");
    if (!descr || !fortran || !shape)
      fail("the keys 'descr', 'fortran_order' and 'shape' are required");
    h.dtype = dtype_of_descr(*descr, h.big_endian, where_);
    h.fortran_order = *fortran;
    h.shape = std::move(*shape);
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    corrupt("Invalid header in ", where_, ": ", what, " at character ", pos_, " of \"",
            printable(s_, 200), "\".");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    if (out.find('\\') != std::string::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return out;
  }
  bool bool_literal() {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<int64_t> int_tuple() {
    std::vector<int64_t> out;
    expect('(');
    bool trailing_comma = false;
    while (true) {
      skip_ws();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("expected a non-negative integer");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 long literals, which old NumPy wrote
      out.push_back(v);
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
      } else if (peek() != ')') {
        fail("expected ',' or ')'");
      }
    }
    // (5) is an int, not a tuple, in Python: one element needs its comma.
    if (out.size() == 1 && !trailing_comma) fail("a one-element shape needs a trailing comma");
    ++pos_;
    return out;
  }

  std::string_view s_;
  std::string where_;
  size_t pos_ = 0;
};

}  // namespace

NpyHeader read_npy_header(Reader& in) {
  // Reads go strictly forward (magic, length, dict), so that a sequential source such as a
  // deflated .npz member never has to rewind.
  const std::string where = in.label();
  char pre[12];
  if (in.size() < 10) {
    corrupt("Invalid header in ", where, ": the file has ", in.size(),
            " bytes, fewer than a .npy header needs.");
  }
  in.read(pre, 10, 0);
  if (std::memcmp(pre, kMagic, kMagicLen) != 0) {
    corrupt("Invalid header in ", where, ": it does not start with the .npy magic string.");
  }
  int major = static_cast<unsigned char>(pre[6]), minor = static_cast<unsigned char>(pre[7]);
  if (major < 1 || major > 3 || minor != 0) {
    corrupt("Unsupported npy format version ", major, ".", minor, " in ", where,
            " (kiln reads 1.0, 2.0 and 3.0).");
  }
  size_t start = major == 1 ? 10 : 12;
  if (in.size() < start) corrupt("Invalid header in ", where, ": the header length is cut off.");
  if (major > 1) in.read(pre + 10, 2, 10);
  size_t header_len = major == 1 ? read_le<uint16_t>(pre + 8) : read_le<uint32_t>(pre + 8);
  if (header_len > kMaxHeader || header_len > in.size() - start) {
    corrupt("Invalid header in ", where, ": it claims ", header_len, " bytes but the file has ",
            in.size() - start, " after the header length.");
  }
  std::string text(header_len, '\0');
  if (header_len > 0) in.read(text.data(), header_len, start);
  if (text.find('\0') != std::string::npos)
    corrupt("Invalid header in ", where, ": it contains a NUL byte.");
  NpyHeader h = HeaderParser(text, where).parse();
  h.data_offset = start + header_len;
  h.nbytes = checked_nbytes(h.shape, h.dtype.size, "The array in " + where);
  return h;
}

array npy_array(const NpyHeader& h, array data, StreamOrDevice s) {
  return h.fortran_order ? transpose(data, to_stream(s, Device::cpu)) : data;
}

std::string npy_header(const array& a, bool fortran) {
  std::string dict = "{'descr': '" + descr_of(a.dtype()) +
                     "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': (";
  for (size_t i = 0; i < a.ndim(); ++i) {
    dict += std::to_string(a.shape()[i]);
    if (i + 1 < a.ndim() || a.ndim() == 1) dict += ",";
    if (i + 1 < a.ndim()) dict += " ";
  }
  dict += "), }";
  // NumPy pads the header with spaces and a newline so that the data starts 64-byte aligned.
  auto total = [&](size_t len_size) {
    size_t used = kMagicLen + 2 + len_size + dict.size() + 1;
    return used + (64 - used % 64) % 64;
  };
  size_t len_size = total(2) - kMagicLen - 4 <= std::numeric_limits<uint16_t>::max() ? 2 : 4;
  size_t header_len = total(len_size) - kMagicLen - 2 - len_size;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(len_size == 2 ? 1 : 2);
  out += '\0';
  if (len_size == 2) {
    put_le<uint16_t>(out, static_cast<uint16_t>(header_len));
  } else {
    put_le<uint32_t>(out, static_cast<uint32_t>(header_len));
  }
  return out + dict;
}

void write_npy(Writer& out, const array& a) {
  bool fortran = !a.flags().row_contiguous;
  std::string header = npy_header(a, fortran);
  out.write(header.data(), header.size());
  if (a.nbytes() > 0) out.write(a.data<char>(), a.nbytes());
}

}  // namespace io

void save(std::shared_ptr<io::Writer> out, array a) {
  a = io::contiguous_for_save(a, /*allow_col=*/true);
  io::write_npy(*out, a);
  out->commit();
}

void save(std::string file, array a) {
  file = io::with_extension(std::move(file), ".npy");
  a = io::contiguous_for_save(a, true);  // before the file is opened: `a` may be read from it
  save(std::make_shared<io::FileWriter>(std::move(file), "save"), a);
}

array load(std::shared_ptr<io::Reader> in, StreamOrDevice s) {
  io::NpyHeader h = io::read_npy_header(*in);
  std::vector<int64_t> dims = h.shape;
  if (h.fortran_order) std::reverse(dims.begin(), dims.end());
  array data = io::lazy_load(in, h.data_offset, io::to_shape(dims, in->label()), h.dtype,
                             h.big_endian, "the array", s);
  return io::npy_array(h, data, s);
}

array load(std::string file, StreamOrDevice s) {
  return load(std::make_shared<io::FileReader>(std::move(file)), s);
}

}  // namespace kiln
