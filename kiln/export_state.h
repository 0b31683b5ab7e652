// The parameters of each primitive, saved into exported functions and read back to rebuild
// the primitive (kiln/export.cpp). One codec per primitive class, found by the class when
// saving and by a stable key (stored in the file) when loading.
//
// A primitive's state is a short list of typed values (bools, integers, floats, strings,
// dtypes, integer and string lists): one encoding serves the file and the export callback
// (which shows the values, as MLX's does). Families register their codecs in
// export_state_*.cpp; a primitive without a codec cannot be exported, and the error names it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <variant>
#include <vector>

#include "kiln/primitive.h"

namespace kiln {

namespace export_detail {

using StateValue = std::variant<bool, int64_t, double, std::string, Dtype, std::vector<int64_t>,
                                std::vector<std::string>>;
using State = std::vector<StateValue>;

/** Appends a primitive's parameters, in the order its loader reads them. */
class StateWriter {
 public:
  StateWriter& b(bool v) { return put(v); }
  StateWriter& i(int64_t v) { return put(v); }
  StateWriter& f(double v) { return put(v); }
  StateWriter& s(std::string v) { return put(std::move(v)); }
  StateWriter& d(Dtype v) { return put(v); }
  template <typename T>
  StateWriter& ints(const std::vector<T>& v) {
    return put(std::vector<int64_t>(v.begin(), v.end()));
  }
  StateWriter& strs(std::vector<std::string> v) { return put(std::move(v)); }
  State take() { return std::move(state_); }

 private:
  template <typename T>
  StateWriter& put(T&& v) {
    state_.emplace_back(std::forward<T>(v));  // in place: no temporary variant to move
    return *this;
  }
  State state_;
};

/** Reads a state back; a missing or mistyped value (a corrupt file) throws
 * std::runtime_error naming the primitive. */
class StateReader {
 public:
  StateReader(const State& state, const std::string& prim) : state_(state), prim_(prim) {}
  bool b() { return get<bool>("bool"); }
  int64_t i() { return get<int64_t>("integer"); }
  /** An integer that must fit an int. */
  int i32();
  double f() { return get<double>("float"); }
  std::string s() { return get<std::string>("string"); }
  Dtype d() { return get<Dtype>("dtype"); }
  std::vector<int64_t> ints() { return get<std::vector<int64_t>>("integer list"); }
  /** An integer list whose values fit an int (shapes, axes). */
  std::vector<int> ints32();
  std::vector<std::string> strs() { return get<std::vector<std::string>>("string list"); }
  /** Throws unless every value was read. */
  void done() const;
  [[noreturn]] void fail(const std::string& why) const;
  const std::string& primitive() const { return prim_; }

 private:
  template <typename T>
  T get(const char* what) {
    if (pos_ >= state_.size()) fail(std::string("missing a ") + what);
    const T* v = std::get_if<T>(&state_[pos_]);
    if (!v) fail(std::string("expected a ") + what + " at position " + std::to_string(pos_));
    ++pos_;
    return *v;
  }
  const State& state_;
  const std::string& prim_;
  size_t pos_ = 0;
};

/** What an import rebuilds for one node: a primitive (the usual case). */
using Loader = std::function<std::shared_ptr<Primitive>(StateReader&, Stream)>;
using Saver = std::function<void(const Primitive&, StateWriter&)>;

/** A loader that rebuilds the primitive through its op, from the inputs' shapes and dtypes
 * (primitives holding closures, such as the fused fast operations). */
using InputLoader = std::function<std::shared_ptr<Primitive>(
    StateReader&, Stream, const std::vector<Shape>&, const std::vector<Dtype>&)>;

struct Codec {
  std::string key;  // stored in files; stable across versions
  Saver save;
  Loader load;              // set for most primitives
  InputLoader load_inputs;  // set instead for those rebuilt through their op
};

class Registry {
 public:
  /** Registers the codec of primitive class T under `key`. */
  template <typename T>
  void add(std::string key, std::function<void(const T&, StateWriter&)> save, Loader load) {
    add_codec(std::type_index(typeid(T)),
              Codec{std::move(key),
                    [save = std::move(save)](const Primitive& p, StateWriter& w) {
                      save(static_cast<const T&>(p), w);
                    },
                    std::move(load), nullptr});
  }
  /** Registers primitive class T, rebuilt through its op on inputs of the saved shapes. */
  template <typename T>
  void add_rebuilt(std::string key, std::function<void(const T&, StateWriter&)> save,
                   InputLoader load) {
    add_codec(std::type_index(typeid(T)),
              Codec{std::move(key),
                    [save = std::move(save)](const Primitive& p, StateWriter& w) {
                      save(static_cast<const T&>(p), w);
                    },
                    nullptr, std::move(load)});
  }
  /** A primitive without parameters, made from its stream alone. */
  template <typename T>
  void add_plain(std::string key) {
    add<T>(
        std::move(key), [](const T&, StateWriter&) {},
        [](StateReader&, Stream s) { return std::make_shared<T>(s); });
  }
  const Codec* by_type(const Primitive& p) const;
  const Codec* by_key(const std::string& key) const;

 private:
  void add_codec(std::type_index type, Codec c);
  std::vector<std::pair<std::type_index, Codec>> codecs_;
};

/** The registry of every codec kiln has (built once, thread-safe). */
const Registry& registry();

/** A stable copy of `s` for primitives that keep a `const char*` op name. */
const char* intern(const std::string& s);

/** MLX's name and arguments for the export callback where kiln's primitive differs (Log2 is
 * MLX's Log with base 2, ...); otherwise the primitive's name and its state. */
std::pair<std::string, State> callback_view(const Primitive& p, const State& state);

}  // namespace export_detail

/** The codecs' access to primitives' parameters: public accessors where a primitive has
 * them, else this struct is its friend. One registration function per family
 * (export_state_*.cpp). */
struct ExportAccess {
  static void register_elementwise(export_detail::Registry& r);   // unary, binary, ternary
  static void register_layout(export_detail::Registry& r);        // layout, creation, compile
  static void register_reduce_index(export_detail::Registry& r);  // reduce, indexing, sort
  static void register_math(export_detail::Registry& r);     // linalg, factor, conv, fft, random,
                                                             // quantized, transforms
  static void register_kernels(export_detail::Registry& r);  // custom and precompiled kernels
  static void register_distributed(export_detail::Registry& r);  // collectives
  static void register_fast(export_detail::Registry& r);         // fused fast operations
};

}  // namespace kiln
