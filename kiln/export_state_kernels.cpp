// Export codecs of user kernels: a custom kernel is saved as its definition (source, header,
// names, flags), its instance (dtypes, template arguments) and its launch (grid,
// threadgroup, init value, output shapes); the import regenerates and recompiles it. A
// precompiled kernel is saved with its image.
#include "kiln/export_state.h"
#include "kiln/primitives_custom.h"
#include "kiln/utils.h"

namespace kiln {

using export_detail::Registry;
using export_detail::StateReader;
using export_detail::StateWriter;

namespace {

void write_triple(StateWriter& w, std::tuple<int, int, int> t) {
  w.ints(std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)});
}

std::tuple<int, int, int> read_triple(StateReader& in) {
  auto v = in.ints32();
  if (v.size() != 3) in.fail("a launch size without 3 dimensions");
  for (int x : v)
    if (x <= 0) in.fail("a launch size that is not positive");
  return {v[0], v[1], v[2]};
}

void write_shapes(StateWriter& w, const std::vector<Shape>& shapes) {
  std::vector<int64_t> ranks, dims;
  for (const auto& s : shapes) {
    ranks.push_back(static_cast<int64_t>(s.size()));
    dims.insert(dims.end(), s.begin(), s.end());
  }
  w.ints(ranks).ints(dims);
}

std::vector<Shape> read_shapes(StateReader& in) {
  auto ranks = in.ints();
  auto dims = in.ints32();
  std::vector<Shape> out;
  size_t pos = 0;
  for (int64_t r : ranks) {
    if (r < 0 || pos + static_cast<size_t>(r) > dims.size()) in.fail("output shapes");
    out.emplace_back(dims.begin() + pos, dims.begin() + pos + r);
    pos += r;
  }
  if (pos != dims.size()) in.fail("output shapes");
  for (const auto& s : out)
    for (int d : s)
      if (d < 0) in.fail("a negative output dimension");
  return out;
}

void write_init(StateWriter& w, const std::optional<float>& v) {
  w.b(v.has_value()).f(v.value_or(0.0f));
}

std::optional<float> read_init(StateReader& in) {
  bool has = in.b();
  double v = in.f();
  return has ? std::optional<float>(static_cast<float>(v)) : std::nullopt;
}

std::vector<int64_t> dtype_codes(const std::vector<Dtype>& ds) {
  std::vector<int64_t> out;
  for (Dtype d : ds) out.push_back(static_cast<int64_t>(d.val));
  return out;
}

Dtype dtype_of_code(StateReader& in, int64_t c) {
  if (c < 0 || c >= Dtype::num_types) in.fail(msg("an unknown dtype code ", c));
  return all_dtypes[c];
}

std::vector<Dtype> read_dtypes(StateReader& in) {
  std::vector<Dtype> out;
  for (int64_t c : in.ints()) out.push_back(dtype_of_code(in, c));
  return out;
}

}  // namespace

void ExportAccess::register_kernels(Registry& r) {
  r.add<CustomKernel>(
      "CustomKernel",
      [](const CustomKernel& p, StateWriter& w) {
        const kernels::KernelSpec& spec = p.spec();
        w.s(spec.flavour == fast::KernelFlavour::metal ? "metal" : "cuda").s(spec.name);
        w.strs(spec.input_names).strs(spec.output_names).s(spec.source).s(spec.header);
        w.b(spec.ensure_row_contiguous).b(spec.atomic_outputs).i(spec.shared_memory);
        w.i(static_cast<int>(spec.math_mode));
        const kernels::KernelInstance& inst = p.program().instance();
        w.ints(dtype_codes(inst.input_dtypes));
        w.ints(std::vector<int64_t>(inst.input_scalar.begin(), inst.input_scalar.end()));
        w.ints(dtype_codes(inst.output_dtypes));
        // Template arguments: names, kinds (0 int, 1 bool, 2 dtype) and values.
        std::vector<std::string> names;
        std::vector<int64_t> kinds, values;
        for (const auto& [name, arg] : inst.template_args) {
          names.push_back(name);
          kinds.push_back(static_cast<int64_t>(arg.index()));
          if (auto* i = std::get_if<int>(&arg)) values.push_back(*i);
          if (auto* b = std::get_if<bool>(&arg)) values.push_back(*b);
          if (auto* d = std::get_if<Dtype>(&arg)) values.push_back(static_cast<int64_t>(d->val));
        }
        w.strs(names).ints(kinds).ints(values);
        write_triple(w, p.grid());
        write_triple(w, p.threadgroup());
        write_init(w, p.init_value());
        write_shapes(w, const_cast<CustomKernel&>(p).output_shapes({}));
      },
      [](StateReader& in, Stream s) {
        kernels::KernelSpec spec;
        std::string flavour = in.s();
        if (flavour != "metal" && flavour != "cuda") in.fail("kernel flavour '" + flavour + "'");
        spec.flavour = flavour == "metal" ? fast::KernelFlavour::metal : fast::KernelFlavour::cuda;
        spec.name = in.s();
        spec.input_names = in.strs();
        spec.output_names = in.strs();
        spec.source = in.s();
        spec.header = in.s();
        spec.ensure_row_contiguous = in.b();
        spec.atomic_outputs = in.b();
        spec.shared_memory = in.i32();
        int64_t math = in.i();
        if (math < 0 || math > 2 || spec.shared_memory < 0) in.fail("kernel options");
        spec.math_mode = static_cast<fast::MathMode>(math);
        kernels::KernelInstance inst;
        inst.input_dtypes = read_dtypes(in);
        for (int64_t v : in.ints()) inst.input_scalar.push_back(v != 0);
        inst.output_dtypes = read_dtypes(in);
        auto names = in.strs();
        auto kinds = in.ints();
        auto values = in.ints();
        if (names.size() != kinds.size() || names.size() != values.size())
          in.fail("template arguments");
        for (size_t i = 0; i < names.size(); ++i) {
          fast::TemplateArg arg;
          if (kinds[i] == 0)
            arg = static_cast<int>(values[i]);
          else if (kinds[i] == 1)
            arg = values[i] != 0;
          else if (kinds[i] == 2)
            arg = dtype_of_code(in, values[i]);
          else
            in.fail("a template argument kind");
          inst.template_args.emplace_back(names[i], arg);
        }
        auto grid = read_triple(in);
        auto tg = read_triple(in);
        auto init = read_init(in);
        auto shapes = read_shapes(in);
        if (inst.input_dtypes.size() != spec.input_names.size() ||
            inst.input_scalar.size() != spec.input_names.size() ||
            inst.output_dtypes.size() != spec.output_names.size() ||
            shapes.size() != spec.output_names.size())
          in.fail("kernel inputs or outputs that do not match its names");
        kernels::check_spec(spec, "import_function");
        auto usage = std::make_shared<const kernels::BodyUsage>(kernels::analyze(spec));
        auto program = std::make_shared<const kernels::KernelProgram>(
            std::make_shared<const kernels::KernelSpec>(std::move(spec)), std::move(usage),
            std::move(inst));
        return std::make_shared<CustomKernel>(s, std::move(program), grid, tg, init,
                                              std::move(shapes));
      });

  r.add<PrecompiledKernel>(
      "PrecompiledKernel",
      [](const PrecompiledKernel& p, StateWriter& w) {
        const PrecompiledDefinition& d = p.definition();
        w.s(d.name).s(d.image).i(d.null_pointers);
        std::vector<int64_t> kinds;
        std::vector<double> values;
        for (const auto& a : p.scalars()) {
          kinds.push_back(static_cast<int64_t>(a.index()));
          if (auto* b = std::get_if<bool>(&a)) values.push_back(*b);
          if (auto* i = std::get_if<int>(&a)) values.push_back(*i);
          if (auto* f = std::get_if<float>(&a)) values.push_back(*f);
        }
        w.ints(kinds);
        // Floats and ints both fit a double exactly.
        for (double v : values) w.f(v);
        write_triple(w, p.grid());
        write_triple(w, p.threadgroup());
        w.i(p.shared_memory());
        write_init(w, p.init_value());
        w.b(p.ensure_row_contiguous());
        write_shapes(w, const_cast<PrecompiledKernel&>(p).output_shapes({}));
      },
      [](StateReader& in, Stream s) {
        auto def = std::make_shared<PrecompiledDefinition>();
        def->name = in.s();
        def->image = in.s();
        def->null_pointers = in.i32();
        try {
          def->info = kernels::inspect_image(def->image);
        } catch (const std::exception& e) {
          in.fail(e.what());
        }
        def->kind = kernels::image_kind_name(def->info.kind);
        def->hash = msg(std::hash<std::string>{}(def->image), "_", def->image.size());
        std::vector<fast::ScalarArg> scalars;
        for (int64_t k : in.ints()) {
          double v = in.f();
          if (k == 0)
            scalars.emplace_back(v != 0);
          else if (k == 1)
            scalars.emplace_back(static_cast<int>(v));
          else if (k == 2)
            scalars.emplace_back(static_cast<float>(v));
          else
            in.fail("a scalar argument kind");
        }
        auto grid = read_triple(in);
        auto tg = read_triple(in);
        int shared = in.i32();
        auto init = read_init(in);
        bool contiguous = in.b();
        auto shapes = read_shapes(in);
        return std::make_shared<PrecompiledKernel>(s, std::move(def), std::move(scalars), grid, tg,
                                                   shared, init, contiguous, std::move(shapes));
      });
}

}  // namespace kiln
