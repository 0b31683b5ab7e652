// Function export and import (MLX's mlx/export.h): trace a function of arrays on example
// inputs, save its graph of primitives to a file, and rebuild it later, in this process or
// another, as a function of new inputs.
//
// The file is kiln's own versioned binary format (kiln/export.cpp documents the layout): a
// header (magic, format version, kiln version, shapeless flag, metadata string) and one
// record per trace (positional and keyword input names, shapes and dtypes, the constants the
// trace captured, each primitive's codec key, device and parameters, the outputs), each
// record checksummed. Constants shared by several traces are stored once.
//
// Semantics follow MLX 0.32:
// - The function is traced as compile traces it (kiln/compile.h): placeholders for the
//   inputs, common subexpressions merged; evaluated arrays it reads are constants. With
//   `shapeless`, the recorded operations recompute their shapes from the inputs' on import,
//   and an imported trace accepts any shapes of the traced ranks.
// - Keyword inputs are matched by name; their order does not matter.
// - The imported function picks the first trace whose positional count, keyword names,
//   dtypes and shapes (ranks when shapeless) match the call; otherwise it throws
//   std::invalid_argument listing the traces it has.
// - The rebuilt graph is made of kiln's ordinary primitives, so the imported function can be
//   differentiated, vectorized and compiled, and runs on the GPU.
// - Fused fast operations rms_norm, layer_norm and scaled_dot_product_attention are rebuilt
//   through their op on import (the fused kernel is kept); the others (rope, cross_entropy,
//   the vjp nodes) and compiled nodes are exported as the operations they are made of.
//   custom_function's transforms are not exported (the forward computation is).
// Errors: a primitive without a codec throws std::invalid_argument naming it; a missing,
// truncated, corrupt or foreign file throws std::runtime_error, all tagged
// `[export_function]` / `[import_function]`.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/array.h"
#include "kiln/transforms.h"

namespace kiln {

/** Keyword inputs of an exported function, by name. */
using Kwargs = std::map<std::string, array>;
/** A function of positional and keyword arrays. */
using KwargsFn = std::function<std::vector<array>(const std::vector<array>&, const Kwargs&)>;

/**
 * Traces `fun` on `args` and `kwargs` and writes the graph to `path` (overwriting it).
 * `metadata` is stored verbatim (e.g. a JSON model configuration) and returned by
 * ImportedFunction::metadata(). Throws std::invalid_argument for a function that cannot be
 * exported (a primitive without a codec, an input read other than through the arguments),
 * std::runtime_error when the file cannot be written.
 */
void export_function(const std::string& path, const KwargsFn& fun, const std::vector<array>& args,
                     const Kwargs& kwargs = {}, bool shapeless = false,
                     const std::string& metadata = "");
/** export_function for a function of positional arrays only. */
void export_function(const std::string& path, const ArrayFn& fun, const std::vector<array>& args,
                     bool shapeless = false, const std::string& metadata = "");

/** One value shown to an export callback (MLX's export_function with a callback). */
struct ExportCallbackInput {
  using Value = std::variant<bool, int64_t, double, std::string, Dtype, std::vector<int64_t>,
                             std::vector<std::string>>;
  /** "inputs", "keyword_inputs", "constants", "primitive" or "outputs". */
  std::string type;
  /** inputs, outputs: (name, shape, dtype) of each array. */
  std::vector<std::tuple<std::string, Shape, Dtype>> arrays;
  /** keyword_inputs: (keyword, name of the input array). */
  std::vector<std::pair<std::string, std::string>> keywords;
  /** constants: (name, value). */
  std::vector<std::pair<std::string, array>> constants;
  /** primitive: MLX's name for it, its parameters and the names of its inputs and outputs. */
  std::string name;
  std::vector<Value> arguments;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};
using ExportCallback = std::function<void(const ExportCallbackInput&)>;

/** Traces `fun` and shows the graph to `callback` instead of writing a file: the inputs,
 * keyword inputs, constants, each primitive in order, then the outputs. */
void export_function(const ExportCallback& callback, const KwargsFn& fun,
                     const std::vector<array>& args, const Kwargs& kwargs = {},
                     bool shapeless = false);

namespace detail {
/** The open file of an exporter: the Python bindings trace through it with a function per
 * call, so that the file holds no reference to the (garbage-collected) Python function. */
class ExportFile;
std::shared_ptr<ExportFile> open_export_file(const std::string& path, bool shapeless,
                                             const std::string& metadata);
void add_trace(ExportFile& file, const KwargsFn& fun, const std::vector<array>& args,
               const Kwargs& kwargs);
void close_export_file(ExportFile& file);
}  // namespace detail

/**
 * Exports several traces of one function (different input counts, keyword names or shapes)
 * to one file: each call traces and appends; the file is complete after every call.
 * Calling after close() throws std::runtime_error.
 */
class FunctionExporter {
 public:
  FunctionExporter(const std::string& path, KwargsFn fun, bool shapeless = false,
                   const std::string& metadata = "");
  void operator()(const std::vector<array>& args);
  void operator()(const Kwargs& kwargs);
  void operator()(const std::vector<array>& args, const Kwargs& kwargs);
  /** Closes the file; later calls throw. */
  void close();

 private:
  std::shared_ptr<detail::ExportFile> file_;
  KwargsFn fun_;
};

/** MLX's exporter(): a FunctionExporter writing to `path`. */
FunctionExporter exporter(const std::string& path, KwargsFn fun, bool shapeless = false,
                          const std::string& metadata = "");

namespace detail {
struct ImportedTraces;
}

/** A function read from a file by import_function; cheap to copy. */
class ImportedFunction {
 public:
  explicit ImportedFunction(std::shared_ptr<const detail::ImportedTraces> traces);
  std::vector<array> operator()(const std::vector<array>& args) const;
  std::vector<array> operator()(const Kwargs& kwargs) const;
  /** Runs the first trace matching the call; throws std::invalid_argument listing the
   * traces when none does. */
  std::vector<array> operator()(const std::vector<array>& args, const Kwargs& kwargs) const;
  /** The metadata string saved with the function ("" when none). */
  const std::string& metadata() const;
  /** How many traces the file holds. */
  size_t num_traces() const;
  bool shapeless() const;

 private:
  std::shared_ptr<const detail::ImportedTraces> traces_;
};

/** Reads a function written by export_function or exporter. Throws std::runtime_error for a
 * missing, truncated, corrupt or foreign file and for a format version this kiln cannot
 * read, std::invalid_argument for a primitive this kiln does not know. */
ImportedFunction import_function(const std::string& path);

}  // namespace kiln
