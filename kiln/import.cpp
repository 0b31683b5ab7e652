// import_function: reads the files export_function writes (layout in export.cpp) and
// replays their traces.
#include "kiln/export.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/compile.h"
#include "kiln/export_format.h"
#include "kiln/export_program.h"
#include "kiln/export_state.h"
#include "kiln/ops.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln {

using export_detail::Cursor;
using export_detail::flatten_inputs;
using export_detail::fnv1a;
using export_detail::kFormatVersion;
using export_detail::kMagic;
using export_detail::stream_of_code;
using export_detail::TraceInputs;

// ---------------------------------------------------------------- reading

namespace detail {

struct ImportedTrace {
  size_t n_args = 0;
  std::vector<std::string> kw_names;
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  std::shared_ptr<const ReplayProgram> program;
};

struct ImportedTraces {
  std::string path;
  std::string metadata;
  bool shapeless = false;
  std::vector<ImportedTrace> traces;
};

}  // namespace detail

namespace {

class FileReader {
 public:
  explicit FileReader(const std::string& path) : path_(path) {
    is_.open(path, std::ios::binary);
    if (!is_) throw std::runtime_error(msg("[import_function] Failed to open ", path, "."));
    is_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(is_.tellg());
    is_.seekg(0);
  }
  std::string read(uint64_t n, const char* what) {
    if (n > size_ - pos_) {
      throw std::runtime_error(msg("[import_function] ", path_, " is truncated (", what, " needs ",
                                   n, " bytes at byte ", pos_, " of ", size_, ")."));
    }
    std::string s(n, '\0');
    is_.read(s.data(), static_cast<std::streamsize>(n));
    if (!is_) throw std::runtime_error(msg("[import_function] Failed to read ", path_, "."));
    pos_ += n;
    return s;
  }
  template <typename T>
  T get(const char* what) {
    std::string s = read(sizeof(T), what);
    T v;
    std::memcpy(&v, s.data(), sizeof(T));
    return v;
  }
  // A length-prefixed block followed by its checksum.
  std::string block(const char* what) {
    uint64_t n = get<uint64_t>(what);
    std::string b = read(n, what);
    uint64_t sum = get<uint64_t>(what);
    if (sum != fnv1a(b.data(), b.size())) {
      throw std::runtime_error(
          msg("[import_function] ", path_, " is corrupt (the checksum of ", what, " differs)."));
    }
    return b;
  }
  bool at_end() const { return pos_ == size_; }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  std::ifstream is_;
  uint64_t size_ = 0, pos_ = 0;
};

detail::ImportedTrace decode_trace(const std::string& body, const std::string& path, bool shapeless,
                                   std::unordered_map<uint64_t, array>& constants) {
  Cursor c(body.data(), body.size(), path);
  detail::ImportedTrace t;
  t.n_args = c.count(0);
  uint32_t n_kw = c.count(8);
  for (uint32_t i = 0; i < n_kw; ++i) t.kw_names.push_back(c.str());
  const size_t n_in = t.n_args + n_kw;
  for (size_t i = 0; i < n_in; ++i) {
    t.shapes.push_back(c.shape());
    t.dtypes.push_back(c.dtype());
  }
  uint32_t n_new = c.count(8);
  for (uint32_t i = 0; i < n_new; ++i) {
    uint64_t key = c.get<uint64_t>();
    Shape shape = c.shape();
    Dtype dtype = c.dtype();
    uint64_t nbytes = c.get<uint64_t>();
    uint64_t expect = dtype.size;
    for (int32_t d : shape) {
      if (d && expect > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
        c.corrupt("a constant's size");
      expect *= static_cast<uint64_t>(d);
    }
    if (nbytes != expect) c.corrupt("a constant's size");
    const char* data = c.raw(nbytes);
    auto storage = Storage::host(nbytes);
    if (nbytes) std::memcpy(storage->host_ptr(), data, nbytes);
    constants.insert_or_assign(key, array(std::move(storage), std::move(shape), dtype));
  }
  auto program = std::make_shared<ReplayProgram>();
  program->num_inputs = static_cast<int>(n_in);
  program->shapeless = shapeless;
  uint32_t n_used = c.count(8);
  for (uint32_t i = 0; i < n_used; ++i) {
    auto it = constants.find(c.get<uint64_t>());
    if (it == constants.end()) c.corrupt("a constant that was never stored");
    program->constants.push_back(it->second);
  }
  size_t n_values = n_in + n_used;
  // Shapes and dtypes of the values so far (for primitives rebuilt through their op).
  std::vector<Shape> value_shapes = t.shapes;
  std::vector<Dtype> value_dtypes = t.dtypes;
  for (const auto& k : program->constants) {
    value_shapes.push_back(k.shape());
    value_dtypes.push_back(k.dtype());
  }
  uint32_t n_steps = c.count(8);
  for (uint32_t i = 0; i < n_steps; ++i) {
    std::string key = c.str();
    uint8_t device = c.get<uint8_t>();
    export_detail::State state = c.state();
    const auto* codec = export_detail::registry().by_key(key);
    if (!codec) {
      throw std::invalid_argument(msg("[import_function] ", path, " uses primitive ", key,
                                      ", which this kiln (", KILN_VERSION, ") does not have."));
    }
    const Stream stream = stream_of_code(device, key, path);
    ReplayProgram::Step st{nullptr, {}, {}, {}};
    std::vector<Shape> in_shapes;
    std::vector<Dtype> in_dtypes;
    uint32_t n_args = c.count(4);
    for (uint32_t j = 0; j < n_args; ++j) {
      uint32_t v = c.get<uint32_t>();
      if (v >= n_values) c.corrupt("a step input that is not yet computed");
      st.in.push_back(static_cast<int>(v));
      in_shapes.push_back(value_shapes[v]);
      in_dtypes.push_back(value_dtypes[v]);
    }
    uint32_t n_out = c.count(5);
    if (n_out == 0) c.corrupt("a step without outputs");
    for (uint32_t j = 0; j < n_out; ++j) {
      st.shapes.push_back(c.shape());
      st.dtypes.push_back(c.dtype());
      value_shapes.push_back(st.shapes.back());
      value_dtypes.push_back(st.dtypes.back());
    }
    export_detail::StateReader reader(state, key);
    st.prim = codec->load ? codec->load(reader, stream)
                          : codec->load_inputs(reader, stream, in_shapes, in_dtypes);
    reader.done();
    n_values += n_out;
    program->steps.push_back(std::move(st));
  }
  uint32_t n_out = c.count(4);
  if (n_out == 0) c.corrupt("a function without outputs");
  for (uint32_t j = 0; j < n_out; ++j) {
    uint32_t v = c.get<uint32_t>();
    if (v >= n_values) c.corrupt("an output that is never computed");
    program->outputs.push_back(static_cast<int>(v));
  }
  if (!c.at_end()) c.corrupt("trailing bytes");
  t.program = std::move(program);
  return t;
}

std::string describe(const std::vector<Shape>& shapes, const std::vector<Dtype>& dtypes,
                     size_t n_args, const std::vector<std::string>& kw_names) {
  std::ostringstream os;
  for (size_t i = 0; i < shapes.size(); ++i) {
    os << "\n   ";
    if (i < n_args)
      os << i + 1;
    else
      os << '"' << kw_names[i - n_args] << '"';
    os << ": " << shape_str(shapes[i]) << " " << dtype_name(dtypes[i]);
  }
  return os.str();
}

}  // namespace

ImportedFunction import_function(const std::string& path) {
  FileReader r(path);
  const size_t head = std::min<uint64_t>(sizeof(kMagic), r.size());
  std::string magic = r.read(head, "the header");
  if (std::memcmp(magic.data(), kMagic, head) != 0 || head == 0) {
    throw std::runtime_error(msg("[import_function] ", path,
                                 " is not a function exported by kiln (no KILNFUNC header)."));
  }
  if (head < sizeof(kMagic)) {
    throw std::runtime_error(
        msg("[import_function] ", path, " is truncated (", head, " bytes: less than its header)."));
  }
  uint32_t version = r.get<uint32_t>("the header");
  if (version != kFormatVersion) {
    throw std::runtime_error(msg("[import_function] ", path, " has export format version ", version,
                                 "; this kiln (", KILN_VERSION, ") reads version ", kFormatVersion,
                                 "."));
  }
  auto traces = std::make_shared<detail::ImportedTraces>();
  traces->path = path;
  {
    std::string h = r.block("the header");
    Cursor c(h.data(), h.size(), path);
    c.str();  // the kiln version that wrote it (informational)
    traces->shapeless = c.get<uint8_t>() != 0;
    traces->metadata = c.str();
    if (!c.at_end()) c.corrupt("trailing header bytes");
  }
  uint32_t count = r.get<uint32_t>("the trace count");
  if (count == 0) {
    throw std::runtime_error(msg("[import_function] ", path, " holds no traced function."));
  }
  std::unordered_map<uint64_t, array> constants;
  for (uint32_t i = 0; i < count; ++i) {
    std::string body = r.block("a trace");
    traces->traces.push_back(decode_trace(body, path, traces->shapeless, constants));
  }
  if (!r.at_end()) {
    throw std::runtime_error(
        msg("[import_function] ", path, " is corrupt (bytes after its ", count, " traces)."));
  }
  return ImportedFunction(std::move(traces));
}

ImportedFunction::ImportedFunction(std::shared_ptr<const detail::ImportedTraces> traces)
    : traces_(std::move(traces)) {}

std::vector<array> ImportedFunction::operator()(const std::vector<array>& args) const {
  return (*this)(args, {});
}
std::vector<array> ImportedFunction::operator()(const Kwargs& kwargs) const {
  return (*this)({}, kwargs);
}

std::vector<array> ImportedFunction::operator()(const std::vector<array>& args,
                                                const Kwargs& kwargs) const {
  TraceInputs in = flatten_inputs(args, kwargs);
  const bool shapeless = traces_->shapeless;
  for (const auto& t : traces_->traces) {
    if (t.n_args != in.n_args || t.kw_names != in.kw_names) continue;
    bool match = true;
    for (size_t i = 0; match && i < in.arrays.size(); ++i) {
      const array& a = in.arrays[i];
      match = a.dtype() == t.dtypes[i] &&
              (shapeless ? a.ndim() == t.shapes[i].size() : a.shape() == t.shapes[i]);
    }
    if (match) return t.program->build(in.arrays);
  }
  std::ostringstream os;
  os << "[import_function] No function in " << traces_->path
     << " matches the given positional and keyword arguments. It has:";
  int k = 0;
  for (const auto& t : traces_->traces) {
    os << "\n " << ++k << ". Function with " << t.n_args << " positional inputs and "
       << t.kw_names.size()
       << " keyword inputs:" << describe(t.shapes, t.dtypes, t.n_args, t.kw_names);
  }
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& a : in.arrays) {
    shapes.push_back(a.shape());
    dtypes.push_back(a.dtype());
  }
  os << "\nCalled with " << in.n_args << " positional inputs and " << in.kw_names.size()
     << " keyword inputs:" << describe(shapes, dtypes, in.n_args, in.kw_names);
  if (shapeless) os << "\n(shapeless: ranks and dtypes must match)";
  throw std::invalid_argument(os.str());
}

const std::string& ImportedFunction::metadata() const {
  return traces_->metadata;
}
size_t ImportedFunction::num_traces() const {
  return traces_->traces.size();
}
bool ImportedFunction::shapeless() const {
  return traces_->shapeless;
}

}  // namespace kiln
