// export_function / exporter / import_function (see export.h).
//
// File layout (little-endian; "str" is a u64 length and bytes, "shape" a u32 rank and i32
// dimensions, "dtype" a u8 code in Dtype::Val order):
//   header:  "KILNFUNC" | u32 format version | u64 n | n bytes [str kiln version,
//            u8 shapeless, str metadata] | u64 checksum of those n bytes | u32 trace count
//   trace:   u64 n | n bytes body | u64 checksum of the body, once per trace
//   body:    u32 positional count | u32 keyword count | str keyword names (sorted)
//            | inputs: shape, dtype each
//            | constants first stored here: u32 count, then u64 key, shape, dtype, u64 bytes,
//              data (row-major) each
//            | constants used: u32 count, u64 key each (numbered after the inputs)
//            | steps: u32 count, then str codec key, u8 device (0 the default device, 1 cpu,
//              2 gpu), state (u32 count of tagged values), u32 input count, u32 value each,
//              u32 output count, shape and dtype each
//            | outputs: u32 count, u32 value each
// Values are numbered: inputs, constants used, then each step's outputs in order. The
// checksum is 64-bit FNV-1a; the trace count is rewritten after each trace of an exporter.
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

using export_detail::Bytes;
using export_detail::device_code;
using export_detail::flatten_inputs;
using export_detail::fnv1a;
using export_detail::kFormatVersion;
using export_detail::kMagic;
using export_detail::TraceInputs;

namespace {

ArrayFn flat_function(const KwargsFn& fun, size_t n_args, const std::vector<std::string>& names) {
  return [fun, n_args, names](const std::vector<array>& xs) {
    std::vector<array> args(xs.begin(), xs.begin() + n_args);
    Kwargs kw;
    for (size_t i = 0; i < names.size(); ++i) kw.emplace(names[i], xs[n_args + i]);
    auto outs = fun(args, kw);
    if (outs.empty()) {
      throw std::invalid_argument(
          "[export_function] The function returned no arrays; it must return at least one.");
    }
    return outs;
  };
}

ReplayProgram trace(const KwargsFn& fun, const TraceInputs& in, bool shapeless) {
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& a : in.arrays) {
    shapes.push_back(a.shape());
    dtypes.push_back(a.dtype());
  }
  return export_detail::trace_program(flat_function(fun, in.n_args, in.kw_names), shapes, dtypes,
                                      in.arrays, shapeless);
}

const export_detail::Codec& codec_of(const Primitive& p) {
  const auto* c = export_detail::registry().by_type(p);
  if (!c) {
    throw std::invalid_argument(msg("[export_function] The function uses primitive ", p.name(),
                                    ", which cannot be exported."));
  }
  return *c;
}

export_detail::State state_of(const Primitive& p, const export_detail::Codec& c) {
  export_detail::StateWriter w;
  c.save(p, w);
  return w.take();
}

// The bytes of an evaluated array, row-major.
void append_data(Bytes& b, const array& c) {
  array a = c;
  a.eval();
  if (!a.flags().row_contiguous || a.data_size() != a.size()) {
    a = copy(a);
    a.eval();
  }
  b.put<uint64_t>(a.nbytes());
  if (a.nbytes()) b.raw(a.data<char>(), a.nbytes());
}

}  // namespace

// ---------------------------------------------------------------- writing

namespace detail {

class ExportFile {
 public:
  ExportFile(const std::string& path, bool shapeless, const std::string& metadata)
      : path_(path), shapeless_(shapeless) {
    os_.open(path, std::ios::binary | std::ios::trunc);
    if (!os_) throw std::runtime_error(msg("[export_function] Failed to open ", path, "."));
    Bytes h;
    h.str(KILN_VERSION);
    h.put<uint8_t>(shapeless);
    h.str(metadata);
    Bytes out;
    out.raw(kMagic, sizeof(kMagic));
    out.put<uint32_t>(kFormatVersion);
    out.put<uint64_t>(h.data().size());
    out.raw(h.data().data(), h.data().size());
    out.put<uint64_t>(fnv1a(h.data().data(), h.data().size()));
    count_offset_ = out.data().size();
    out.put<uint32_t>(0);
    write(out.data());
  }

  bool is_open() const { return open_; }
  bool shapeless() const { return shapeless_; }

  void add_trace(const KwargsFn& fun, const std::vector<array>& args, const Kwargs& kwargs) {
    std::lock_guard lk(mu_);
    if (!open_) {
      throw std::runtime_error(
          msg("[export_function] The exporter of ", path_, " is closed; it takes no more traces."));
    }
    TraceInputs in = flatten_inputs(args, kwargs);
    ReplayProgram p = trace(fun, in, shapeless_);
    std::vector<std::pair<array, uint64_t>> added;
    Bytes body = encode(in, p, added);
    Bytes rec;
    rec.put<uint64_t>(body.data().size());
    rec.raw(body.data().data(), body.data().size());
    rec.put<uint64_t>(fnv1a(body.data().data(), body.data().size()));
    os_.seekp(0, std::ios::end);
    write(rec.data());
    ++count_;
    os_.seekp(static_cast<std::streamoff>(count_offset_));
    Bytes c;
    c.put<uint32_t>(count_);
    write(c.data());
    os_.flush();
    if (!os_) throw std::runtime_error(msg("[export_function] Failed to write ", path_, "."));
    for (auto& [a, key] : added) {
      key_of_.emplace(a.id(), key);
      constants_.push_back(std::move(a));
    }
  }

  void close() {
    std::lock_guard lk(mu_);
    if (!open_) return;
    open_ = false;
    os_.close();
    constants_.clear();
    key_of_.clear();
  }

 private:
  void write(const std::string& s) {
    os_.write(s.data(), static_cast<std::streamsize>(s.size()));
    if (!os_) throw std::runtime_error(msg("[export_function] Failed to write ", path_, "."));
  }

  Bytes encode(const TraceInputs& in, const ReplayProgram& p,
               std::vector<std::pair<array, uint64_t>>& added) {
    const Stream def = to_stream(StreamOrDevice{});
    // Codecs first: an unexportable primitive fails before anything is written.
    std::vector<const export_detail::Codec*> codecs;
    for (const auto& st : p.steps) codecs.push_back(&codec_of(*st.prim));

    Bytes b;
    b.put<uint32_t>(static_cast<uint32_t>(in.n_args));
    b.put<uint32_t>(static_cast<uint32_t>(in.kw_names.size()));
    for (const auto& k : in.kw_names) b.str(k);
    for (const auto& a : in.arrays) {
      b.shape(a.shape());
      b.dtype(a.dtype());
    }
    // Constants: stored once per file, by identity (the exporter keeps them alive).
    std::vector<uint64_t> keys;
    std::unordered_map<uintptr_t, uint64_t> fresh_keys;
    for (const auto& c : p.constants) {
      uint64_t key;
      if (auto it = key_of_.find(c.id()); it != key_of_.end()) {
        key = it->second;
      } else if (auto f = fresh_keys.find(c.id()); f != fresh_keys.end()) {
        key = f->second;
      } else {
        key = ++next_key_;
        fresh_keys.emplace(c.id(), key);
        added.emplace_back(c, key);
      }
      keys.push_back(key);
    }
    b.put<uint32_t>(static_cast<uint32_t>(added.size()));
    for (const auto& [c, key] : added) {
      b.put<uint64_t>(key);
      b.shape(c.shape());
      b.dtype(c.dtype());
      append_data(b, c);
    }
    b.put<uint32_t>(static_cast<uint32_t>(keys.size()));
    for (uint64_t k : keys) b.put<uint64_t>(k);
    b.put<uint32_t>(static_cast<uint32_t>(p.steps.size()));
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const auto& st = p.steps[i];
      b.str(codecs[i]->key);
      b.put<uint8_t>(device_code(st.prim->stream(), def));
      b.state(state_of(*st.prim, *codecs[i]));
      b.put<uint32_t>(static_cast<uint32_t>(st.in.size()));
      for (int v : st.in) b.put<uint32_t>(static_cast<uint32_t>(v));
      b.put<uint32_t>(static_cast<uint32_t>(st.shapes.size()));
      for (size_t o = 0; o < st.shapes.size(); ++o) {
        b.shape(st.shapes[o]);
        b.dtype(st.dtypes[o]);
      }
    }
    b.put<uint32_t>(static_cast<uint32_t>(p.outputs.size()));
    for (int v : p.outputs) b.put<uint32_t>(static_cast<uint32_t>(v));
    return b;
  }

  std::mutex mu_;
  std::string path_;
  bool shapeless_;
  std::ofstream os_;
  size_t count_offset_ = 0;
  uint32_t count_ = 0;
  bool open_ = true;
  uint64_t next_key_ = 0;
  // Constants already in the file, by array identity; kept alive so identities stay unique.
  std::vector<array> constants_;
  std::unordered_map<uintptr_t, uint64_t> key_of_;
};

std::shared_ptr<ExportFile> open_export_file(const std::string& path, bool shapeless,
                                             const std::string& metadata) {
  return std::make_shared<ExportFile>(path, shapeless, metadata);
}
void add_trace(ExportFile& file, const KwargsFn& fun, const std::vector<array>& args,
               const Kwargs& kwargs) {
  file.add_trace(fun, args, kwargs);
}
void close_export_file(ExportFile& file) {
  file.close();
}

}  // namespace detail

void export_function(const std::string& path, const KwargsFn& fun, const std::vector<array>& args,
                     const Kwargs& kwargs, bool shapeless, const std::string& metadata) {
  if (!fun) throw std::invalid_argument("[export_function] Cannot export an empty function.");
  detail::ExportFile f(path, shapeless, metadata);
  try {
    f.add_trace(fun, args, kwargs);
  } catch (...) {
    f.close();
    std::remove(path.c_str());  // no half-written file
    throw;
  }
  f.close();
}

void export_function(const std::string& path, const ArrayFn& fun, const std::vector<array>& args,
                     bool shapeless, const std::string& metadata) {
  if (!fun) throw std::invalid_argument("[export_function] Cannot export an empty function.");
  export_function(
      path, [fun](const std::vector<array>& a, const Kwargs&) { return fun(a); }, args, {},
      shapeless, metadata);
}

void export_function(const ExportCallback& callback, const KwargsFn& fun,
                     const std::vector<array>& args, const Kwargs& kwargs, bool shapeless) {
  if (!callback) throw std::invalid_argument("[export_function] The callback is empty.");
  if (!fun) throw std::invalid_argument("[export_function] Cannot export an empty function.");
  TraceInputs in = flatten_inputs(args, kwargs);
  ReplayProgram p = trace(fun, in, shapeless);
  const int n_in = static_cast<int>(in.arrays.size());
  const int n_const = static_cast<int>(p.constants.size());
  auto name = [&](int v) {
    if (v < n_in) return msg("input_", v);
    if (v < n_in + n_const) return msg("constant_", v - n_in);
    return msg("value_", v);
  };
  ExportCallbackInput e;
  e.type = "inputs";
  for (int i = 0; i < n_in; ++i)
    e.arrays.emplace_back(name(i), in.arrays[i].shape(), in.arrays[i].dtype());
  callback(e);
  e = {};
  e.type = "keyword_inputs";
  for (size_t i = 0; i < in.kw_names.size(); ++i)
    e.keywords.emplace_back(in.kw_names[i], name(static_cast<int>(in.n_args + i)));
  callback(e);
  e = {};
  e.type = "constants";
  for (int i = 0; i < n_const; ++i) e.constants.emplace_back(name(n_in + i), p.constants[i]);
  callback(e);
  int next = n_in + n_const;
  for (const auto& st : p.steps) {
    const auto& codec = codec_of(*st.prim);
    auto [prim_name, state] = export_detail::callback_view(*st.prim, state_of(*st.prim, codec));
    e = {};
    e.type = "primitive";
    e.name = prim_name;
    for (auto& v : state) e.arguments.push_back(std::move(v));
    for (int v : st.in) e.inputs.push_back(name(v));
    for (size_t o = 0; o < st.shapes.size(); ++o) e.outputs.push_back(name(next++));
    callback(e);
  }
  e = {};
  e.type = "outputs";
  for (int v : p.outputs) {
    Shape s;
    Dtype d = float32;
    if (v < n_in) {
      s = in.arrays[v].shape();
      d = in.arrays[v].dtype();
    } else {
      std::tie(s, d) = p.value_info(v);
    }
    e.arrays.emplace_back(name(v), s, d);
  }
  callback(e);
}

FunctionExporter::FunctionExporter(const std::string& path, KwargsFn fun, bool shapeless,
                                   const std::string& metadata)
    : file_(std::make_shared<detail::ExportFile>(path, shapeless, metadata)), fun_(std::move(fun)) {
  if (!fun_) throw std::invalid_argument("[export_function] Cannot export an empty function.");
}

void FunctionExporter::operator()(const std::vector<array>& args) {
  (*this)(args, {});
}
void FunctionExporter::operator()(const Kwargs& kwargs) {
  (*this)({}, kwargs);
}
void FunctionExporter::operator()(const std::vector<array>& args, const Kwargs& kwargs) {
  file_->add_trace(fun_, args, kwargs);
}
void FunctionExporter::close() {
  file_->close();
}

FunctionExporter exporter(const std::string& path, KwargsFn fun, bool shapeless,
                          const std::string& metadata) {
  return FunctionExporter(path, std::move(fun), shapeless, metadata);
}

}  // namespace kiln
