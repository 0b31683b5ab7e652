// The MPI engine of kiln::distributed (CPU streams): Open MPI's libmpi.so.40, dlopen'ed at
// first use so kiln builds and runs where MPI is missing.
//
// Open MPI's handles are addresses of exported objects (MPI_COMM_WORLD is
// &ompi_mpi_comm_world, MPI_FLOAT &ompi_mpi_float, ...), so they are resolved with dlsym;
// other MPI implementations (MPICH's integer handles) are not supported. MPI has no
// float16/bfloat16: those travel as 2-byte types reduced by our own MPI_Op functions.
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "kiln/distributed/backend.h"
#include "kiln/half_types.h"
#include "kiln/utils.h"

namespace kiln::distributed::detail {

const char* reduce_op_name(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max" : "min";
}

namespace {

using Handle = void*;  // MPI_Comm, MPI_Datatype, MPI_Op, MPI_Errhandler: pointers in Open MPI
using UserFn = void (*)(void*, void*, int*, Handle*);
constexpr int kThreadMultiple = 3;

struct Mpi {
  int (*Init_thread)(int*, char***, int, int*) = nullptr;
  int (*Initialized)(int*) = nullptr;
  int (*Finalized)(int*) = nullptr;
  int (*Finalize)() = nullptr;
  int (*Comm_rank)(Handle, int*) = nullptr;
  int (*Comm_size)(Handle, int*) = nullptr;
  int (*Comm_split)(Handle, int, int, Handle*) = nullptr;
  int (*Comm_set_errhandler)(Handle, Handle) = nullptr;
  int (*Allreduce)(const void*, void*, int, Handle, Handle, Handle) = nullptr;
  int (*Allgather)(const void*, int, Handle, void*, int, Handle, Handle) = nullptr;
  int (*Reduce_scatter_block)(const void*, void*, int, Handle, Handle, Handle) = nullptr;
  int (*Send)(const void*, int, Handle, int, int, Handle) = nullptr;
  int (*Recv)(void*, int, Handle, int, int, Handle, void*) = nullptr;
  int (*Get_count)(const void*, Handle, int*) = nullptr;
  int (*Bcast)(void*, int, Handle, int, Handle) = nullptr;
  int (*Type_contiguous)(int, Handle, Handle*) = nullptr;
  int (*Type_commit)(Handle*) = nullptr;
  int (*Op_create)(UserFn, int, Handle*) = nullptr;
  int (*Error_string)(int, char*, int*) = nullptr;

  Handle comm_world = nullptr, errors_return = nullptr, byte = nullptr;
  Handle op_sum = nullptr, op_max = nullptr, op_min = nullptr, op_lor = nullptr, op_land = nullptr;
  Handle types[Dtype::num_types] = {};
  // float16/bfloat16: 2-byte types and our reductions (index: 0 float16, 1 bfloat16).
  Handle half_types[2] = {};
  Handle half_ops[2][3] = {};
  // Sums of 8- and 16-bit integers: Open MPI 4.1's AVX MPI_SUM saturates them, C++ wraps.
  Handle small_int_sum[Dtype::num_types] = {};
  bool serialize = false;  // no MPI_THREAD_MULTIPLE: one call at a time
  std::mutex mu;
  std::string error;
};

void* g_lib = nullptr;

Mpi& lib() {
  static Mpi* m = [] {
    auto* m = new Mpi;
    std::string tried;
    const char* env = std::getenv("KILN_MPI_PATH");
    std::vector<std::string> names;
    if (env && *env) names.push_back(env);
    for (const char* n : {"libmpi.so.40", "libmpi.so", "/usr/lib/x86_64-linux-gnu/libmpi.so.40",
                          "/usr/lib/aarch64-linux-gnu/libmpi.so.40"}) {
      names.push_back(n);
    }
    for (const auto& n : names) {
      // RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols.
      g_lib = dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (g_lib) break;
      const char* why = dlerror();
      tried += (tried.empty() ? "" : "; ") + n + (why ? std::string(" (") + why + ")" : "");
    }
    if (!g_lib) {
      m->error =
          "MPI (Open MPI's libmpi.so.40; Debian/Ubuntu: apt-get install libopenmpi-dev "
          "openmpi-bin, or set KILN_MPI_PATH) is not available: tried " +
          tried;
      return m;
    }
    auto sym = [&](const char* name) {
      void* p = dlsym(g_lib, name);
      if (!p && m->error.empty()) {
        m->error = msg("the loaded libmpi lacks ", name, " (kiln supports Open MPI only)");
      }
      return p;
    };
#define KILN_MPI_FN(name) m->name = reinterpret_cast<decltype(m->name)>(sym("MPI_" #name));
    KILN_MPI_FN(Init_thread)
    KILN_MPI_FN(Initialized)
    KILN_MPI_FN(Finalized) KILN_MPI_FN(Finalize) KILN_MPI_FN(Comm_rank) KILN_MPI_FN(Comm_size)
        KILN_MPI_FN(Comm_split) KILN_MPI_FN(Comm_set_errhandler) KILN_MPI_FN(Allreduce)
            KILN_MPI_FN(Allgather) KILN_MPI_FN(Reduce_scatter_block) KILN_MPI_FN(Send)
                KILN_MPI_FN(Recv) KILN_MPI_FN(Get_count) KILN_MPI_FN(Bcast)
                    KILN_MPI_FN(Type_contiguous) KILN_MPI_FN(Type_commit) KILN_MPI_FN(Op_create)
                        KILN_MPI_FN(Error_string)
#undef KILN_MPI_FN
                            m->comm_world = sym("ompi_mpi_comm_world");
    m->errors_return = sym("ompi_mpi_errors_return");
    m->byte = sym("ompi_mpi_byte");
    m->op_sum = sym("ompi_mpi_op_sum");
    m->op_max = sym("ompi_mpi_op_max");
    m->op_min = sym("ompi_mpi_op_min");
    m->op_lor = sym("ompi_mpi_op_lor");
    m->op_land = sym("ompi_mpi_op_land");
    auto set = [&](Dtype d, const char* name) { m->types[static_cast<int>(d.val)] = sym(name); };
    set(bool_, "ompi_mpi_c_bool");
    set(uint8, "ompi_mpi_uint8_t");
    set(uint16, "ompi_mpi_uint16_t");
    set(uint32, "ompi_mpi_uint32_t");
    set(uint64, "ompi_mpi_uint64_t");
    set(int8, "ompi_mpi_int8_t");
    set(int16, "ompi_mpi_int16_t");
    set(int32, "ompi_mpi_int32_t");
    set(int64, "ompi_mpi_int64_t");
    set(float32, "ompi_mpi_float");
    set(float64, "ompi_mpi_double");
    set(complex64, "ompi_mpi_c_float_complex");
    return m;
  }();
  return *m;
}

std::string error_string(int code) {
  char buf[512];
  int len = 0;
  if (lib().Error_string && lib().Error_string(code, buf, &len) == 0) return std::string(buf, len);
  return "MPI error";
}

void check(const char* op, const char* call, int code) {
  if (code != 0) {
    throw std::runtime_error(
        msg("[", op, "] ", call, " failed: ", error_string(code), " (", code, ")."));
  }
}

template <typename T>
void wrapping_sum(void* in, void* inout, int* len, Handle*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = static_cast<T>(a[i] + b[i]);
}

// Elementwise reductions of the 2-byte float types, computed in float32.
template <typename T, int Op>
void half_reduce(void* in, void* inout, int* len, Handle*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    float r = Op == 0 ? x + y : Op == 1 ? (x > y || x != x ? x : y) : (x < y || x != x ? x : y);
    b[i] = T(r);
  }
}

void atexit_finalize() {
  Mpi& m = lib();
  int finalized = 1;
  if (m.Finalized && m.Finalized(&finalized) == 0 && !finalized) m.Finalize();
}

Mpi& initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    Mpi& m = lib();
    if (!m.error.empty()) return;
    int flag = 0;
    m.Initialized(&flag);
    if (!flag) {
      int provided = 0;
      int rc = m.Init_thread(nullptr, nullptr, kThreadMultiple, &provided);
      if (rc != 0) {
        m.error = msg("MPI_Init_thread failed: ", error_string(rc));
        return;
      }
      m.serialize = provided < kThreadMultiple;
      std::atexit(atexit_finalize);
    } else {
      m.serialize = true;
    }
    m.Comm_set_errhandler(m.comm_world, m.errors_return);
    for (int h = 0; h < 2; ++h) {
      m.Type_contiguous(2, m.byte, &m.half_types[h]);
      m.Type_commit(&m.half_types[h]);
    }
    m.Op_create(&half_reduce<float16_t, 0>, 1, &m.half_ops[0][0]);
    m.Op_create(&half_reduce<float16_t, 1>, 1, &m.half_ops[0][1]);
    m.Op_create(&half_reduce<float16_t, 2>, 1, &m.half_ops[0][2]);
    m.Op_create(&half_reduce<bfloat16_t, 0>, 1, &m.half_ops[1][0]);
    m.Op_create(&half_reduce<bfloat16_t, 1>, 1, &m.half_ops[1][1]);
    m.Op_create(&half_reduce<bfloat16_t, 2>, 1, &m.half_ops[1][2]);
    m.Op_create(&wrapping_sum<int8_t>, 1, &m.small_int_sum[static_cast<int>(Dtype::Val::int8)]);
    m.Op_create(&wrapping_sum<uint8_t>, 1, &m.small_int_sum[static_cast<int>(Dtype::Val::uint8)]);
    m.Op_create(&wrapping_sum<int16_t>, 1, &m.small_int_sum[static_cast<int>(Dtype::Val::int16)]);
    m.Op_create(&wrapping_sum<uint16_t>, 1, &m.small_int_sum[static_cast<int>(Dtype::Val::uint16)]);
  });
  Mpi& m = lib();
  if (!m.error.empty()) throw std::runtime_error("[distributed] " + m.error + ".");
  return m;
}

int to_int(size_t n, const char* op, const char* what) {
  if (n > static_cast<size_t>(INT_MAX)) {
    throw std::invalid_argument(
        msg("[", op, "] ", what, " ", n, " exceeds MPI's count limit (", INT_MAX, ")."));
  }
  return static_cast<int>(n);
}

class MpiCommImpl : public MpiComm {
 public:
  MpiCommImpl(Handle comm, bool owned) : comm_(comm) {
    Mpi& m = initialized();
    check("distributed", "MPI_Comm_rank", m.Comm_rank(comm_, &rank_));
    check("distributed", "MPI_Comm_size", m.Comm_size(comm_, &size_));
    (void)owned;
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::shared_ptr<MpiComm> split(int color, int key) override {
    Mpi& m = initialized();
    Handle out = nullptr;
    {
      auto lk = lock(m);
      check("split", "MPI_Comm_split", m.Comm_split(comm_, color, key, &out));
    }
    m.Comm_set_errhandler(out, m.errors_return);
    return std::make_shared<MpiCommImpl>(out, true);
  }

  void check_consistent(const char* op, const Shape& shape, Dtype dtype, bool same_shape) override {
    // Every rank's (op, dtype, ndim, dims...) record, so the error can name each rank's call.
    static const char* kOps[] = {"all_sum", "all_max", "all_min", "all_gather", "sum_scatter"};
    constexpr int kMaxDims = 13, kLen = kMaxDims + 3;
    int64_t mine[kLen] = {};
    mine[0] = std::find_if(std::begin(kOps), std::end(kOps),
                           [&](const char* o) { return std::strcmp(o, op) == 0; }) -
              std::begin(kOps);
    mine[1] = static_cast<int64_t>(dtype.val);
    mine[2] = static_cast<int64_t>(shape.size());
    for (size_t i = 0; i < shape.size() && i < kMaxDims; ++i) mine[i + 3] = shape[i];
    std::vector<int64_t> all(static_cast<size_t>(size_) * kLen);
    {
      Mpi& m = initialized();
      auto lk = lock(m);
      check(op, "MPI_Allgather",
            m.Allgather(mine, sizeof(mine), m.byte, all.data(), sizeof(mine), m.byte, comm_));
    }
    bool ok = true;
    for (int r = 1; r < size_ && ok; ++r) {
      const int64_t* rec = all.data() + static_cast<size_t>(r) * kLen;
      ok = rec[0] == all[0] && rec[1] == all[1] &&
           (!same_shape || std::equal(rec, rec + kLen, all.data()));
    }
    if (ok) return;
    std::string parts;
    for (int r = 0; r < size_; ++r) {
      const int64_t* rec = all.data() + static_cast<size_t>(r) * kLen;
      Shape s(rec + 3, rec + 3 + std::min<int64_t>(rec[2], kMaxDims));
      parts += msg(r ? ", " : "", "rank ", r, " has ", shape_str(s), " ",
                   dtype_name(Dtype{static_cast<Dtype::Val>(rec[1]), 0}),
                   rec[0] == all[0] ? "" : msg(" in ", rec[0] < 5 ? kOps[rec[0]] : "another op"));
    }
    throw std::invalid_argument(msg("[", op, "] The inputs differ across the ", size_, " ranks (",
                                    same_shape ? "collectives, shapes and dtypes" : "dtypes",
                                    " must match): ", parts, "."));
  }

  void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    Mpi& m = initialized();
    auto [type, mop] = type_and_op(m, dtype, op, "all_reduce");
    // Chunks below MPI's int count limit.
    const size_t chunk = size_t{1} << 30;
    auto lk = lock(m);
    for (size_t done = 0; done < count; done += chunk) {
      size_t n = std::min(chunk, count - done);
      check("all_reduce", "MPI_Allreduce",
            m.Allreduce(static_cast<const char*>(in) + done * dtype.size,
                        static_cast<char*>(out) + done * dtype.size, static_cast<int>(n), type, mop,
                        comm_));
    }
  }

  void all_gather(const void* in, void* out, size_t nbytes) override {
    Mpi& m = initialized();
    int n = to_int(nbytes, "all_gather", "bytes per rank");
    auto lk = lock(m);
    check("all_gather", "MPI_Allgather", m.Allgather(in, n, m.byte, out, n, m.byte, comm_));
  }

  void reduce_scatter(const void* in, void* out, size_t count_per_rank, Dtype dtype) override {
    Mpi& m = initialized();
    auto [type, mop] = type_and_op(m, dtype, ReduceOp::sum, "sum_scatter");
    int n = to_int(count_per_rank, "sum_scatter", "elements per rank");
    auto lk = lock(m);
    check("sum_scatter", "MPI_Reduce_scatter_block",
          m.Reduce_scatter_block(in, out, n, type, mop, comm_));
  }

  void send(const void* data, size_t nbytes, int dst) override {
    Mpi& m = initialized();
    auto lk = lock(m);
    const size_t chunk = size_t{1} << 30;
    size_t done = 0;
    do {
      size_t n = std::min(chunk, nbytes - done);
      check("send", "MPI_Send",
            m.Send(static_cast<const char*>(data) + done, static_cast<int>(n), m.byte, dst, 0,
                   comm_));
      done += n;
    } while (done < nbytes);
  }

  void recv(void* data, size_t nbytes, int src) override {
    Mpi& m = initialized();
    auto lk = lock(m);
    const size_t chunk = size_t{1} << 30;
    size_t done = 0;
    do {
      size_t n = std::min(chunk, nbytes - done);
      alignas(16) char status[64] = {};
      int rc = m.Recv(static_cast<char*>(data) + done, static_cast<int>(n), m.byte, src, 0, comm_,
                      status);
      if (rc != 0) {
        throw std::runtime_error(
            msg("[recv] MPI_Recv from rank ", src, " of ", nbytes,
                " bytes failed (was the matching send larger?): ", error_string(rc), "."));
      }
      int got = 0;
      m.Get_count(status, m.byte, &got);
      if (static_cast<size_t>(got) != n) {
        throw std::runtime_error(msg("[recv] Expected ", nbytes, " bytes from rank ", src,
                                     " but the matching send had ", done + got,
                                     ": the shapes or dtypes of send and recv differ."));
      }
      done += n;
    } while (done < nbytes);
  }

  void broadcast(std::string& bytes) override {
    Mpi& m = initialized();
    auto lk = lock(m);
    int64_t n = static_cast<int64_t>(bytes.size());
    check("distributed", "MPI_Bcast", m.Bcast(&n, 8, m.byte, 0, comm_));
    bytes.resize(static_cast<size_t>(n));
    check("distributed", "MPI_Bcast", m.Bcast(bytes.data(), static_cast<int>(n), m.byte, 0, comm_));
  }

 private:
  static std::unique_lock<std::mutex> lock(Mpi& m) {
    return m.serialize ? std::unique_lock<std::mutex>(m.mu) : std::unique_lock<std::mutex>();
  }

  static std::pair<Handle, Handle> type_and_op(Mpi& m, Dtype dtype, ReduceOp op, const char* name) {
    const int o = static_cast<int>(op);
    if (dtype == float16 || dtype == bfloat16) {
      const int h = dtype == float16 ? 0 : 1;
      return {m.half_types[h], m.half_ops[h][o]};
    }
    if (dtype == bool_) {
      return {m.types[static_cast<int>(dtype.val)], op == ReduceOp::min ? m.op_land : m.op_lor};
    }
    if (dtype == complex64 && op != ReduceOp::sum) {
      throw std::invalid_argument(msg("[", name, "] complex64 has no ", reduce_op_name(op), "."));
    }
    Handle t = m.types[static_cast<int>(dtype.val)];
    if (op == ReduceOp::sum && m.small_int_sum[static_cast<int>(dtype.val)]) {
      return {t, m.small_int_sum[static_cast<int>(dtype.val)]};
    }
    if (!t)
      throw std::invalid_argument(msg("[", name, "] Unsupported dtype ", dtype_name(dtype), "."));
    return {t, op == ReduceOp::sum ? m.op_sum : op == ReduceOp::max ? m.op_max : m.op_min};
  }

  Handle comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool mpi_available(std::string* why) {
  Mpi& m = lib();
  if (why) *why = m.error;
  return m.error.empty();
}

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

std::shared_ptr<MpiComm> mpi_world() {
  static std::shared_ptr<MpiComm> world;
  static std::mutex mu;
  std::lock_guard lk(mu);
  if (!world) {
    Mpi& m = initialized();
    world = std::make_shared<MpiCommImpl>(m.comm_world, false);
  }
  return world;
}

}  // namespace kiln::distributed::detail
