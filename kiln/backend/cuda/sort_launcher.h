// The GPU side of the sort family's radix kernels: kiln dtypes as key types, rows in the
// affine layout the kernels read (copying when a view has another), and the Launcher that
// runs sort_plan.h's sequences on a stream. Modules: one per family and key type
// ("sort_radix_select_u4k2"), listed in the catalog.
#pragma once

#include <cuda.h>

#include "kiln/array.h"
#include "kiln/backend/cuda/sort_plan.h"

namespace kiln::gpu {

class DeviceStream;

/** How the kernels see dtype `d`. */
sortplan::KeyType sort_key_type(Dtype d);

/** Rows along the last axis as the kernels read them: row r at ptr + r * row_stride. */
struct AffineRows {
  CUdeviceptr ptr = 0;
  int64_t row_stride = 0;
};

/** `in`'s rows along `axis`, in place when they are affine with unit stride, else from a
 * row-contiguous copy (with the axis moved last) in scratch. */
AffineRows affine_rows(const array& in, int axis, DeviceStream& s);

/** Runs sort_plan.h's kernels of one key type on `s`. */
class SortLauncher final : public sortplan::Launcher {
 public:
  SortLauncher(DeviceStream& s, sortplan::KeyType key) : s_(s), key_(key) {}
  void launch(sortplan::Family f, const std::string& kernel, int64_t blocks, uint32_t threads,
              void** params) override;
  uint64_t scratch(size_t bytes) override;
  void zero(uint64_t ptr, size_t bytes) override;
  int multiprocessors() const override;

 private:
  DeviceStream& s_;
  sortplan::KeyType key_;
};

}  // namespace kiln::gpu
