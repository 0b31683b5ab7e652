// eval_gpu of Partition, ArgPartition, Median, SearchSorted and Unique: the radix kernels of
// device/radix_select.cuh, device/radix_sort.cuh and device/sort_search.cuh, launched in the
// sequences of sort_plan.h (selection: one block per row, or many for few long rows).
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/sort_launcher.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_sort.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

/** Selection over the rows of `in` (last axis) into the outputs of `job` (filled in here:
 * key, rows, n, input). */
void select_gpu(const array& in, sortplan::SelectJob job, gpu::DeviceStream& s) {
  const int axis = static_cast<int>(in.ndim()) - 1;
  const gpu::AffineRows rows = gpu::affine_rows(in, axis, s);
  job.key = gpu::sort_key_type(in.dtype());
  job.n = in.shape()[axis];
  job.rows = static_cast<int64_t>(shape_size(Shape(in.shape().begin(), in.shape().end() - 1)));
  job.in = rows.ptr;
  job.row_stride = rows.row_stride;
  gpu::SortLauncher launcher(s, job.key);
  sortplan::select(launcher, job);
}

}  // namespace

void Partition::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  sortplan::SelectJob job;
  job.kth = kth_;
  job.w0 = start_;
  job.out_values = gpu::device_address(out);
  select_gpu(inputs[0], job, s);
}

void ArgPartition::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  sortplan::SelectJob job;
  job.kth = kth_;
  job.w0 = start_;
  job.out_indices = gpu::device_address(out);
  select_gpu(inputs[0], job, s);
}

void Median::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  sortplan::SelectJob job;
  job.median = true;
  job.out_median = gpu::device_address(out);
  select_gpu(inputs[0], job, s);
}

void SearchSorted::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& seq = inputs[0];
  const array& values = inputs[1];
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  sortplan::SearchJob job;
  job.key = gpu::sort_key_type(seq.dtype());
  job.right = right_;
  job.n = seq.shape()[0];
  job.seq = gpu::device_address(seq);
  job.seq_stride = seq.strides()[0];
  job.values = gpu::device_address(values);
  if (!values.flags().row_contiguous) {
    job.values = gpu::scratch(values.nbytes(), s);
    gpu::copy_to_row_contiguous(values, job.values, s);
  }
  job.count = static_cast<int64_t>(values.size());
  job.out = gpu::device_address(out);
  gpu::SortLauncher launcher(s, job.key);
  sortplan::searchsorted(launcher, job);
}

void Unique::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  auto& s = gpu::device_stream(stream());
  for (auto& o : outputs) o.set_data(gpu::new_device_storage(o.nbytes(), s));
  sortplan::UniqueJob job;
  job.key = gpu::sort_key_type(in.dtype());
  job.n = in.shape().back();
  job.rows = static_cast<int64_t>(shape_size(Shape(in.shape().begin(), in.shape().end() - 1)));
  if (job.n == 0 && size_ == 0) return;
  job.size = size_;
  if (job.n > 0) {
    const gpu::AffineRows rows = gpu::affine_rows(in, static_cast<int>(in.ndim()) - 1, s);
    job.in = rows.ptr;
    job.row_stride = rows.row_stride;
  }
  if (has_fill_) {
    const array& fill = inputs[1];
    job.fill = gpu::device_address(fill);
    job.fill_stride = fill.ndim() > 0 ? 1 : 0;
    if (fill.ndim() > 0 && !fill.flags().row_contiguous) {
      job.fill = gpu::scratch(fill.nbytes(), s);
      gpu::copy_to_row_contiguous(fill, job.fill, s);
    }
  }
  job.values = gpu::device_address(outputs[0]);
  job.index = gpu::device_address(outputs[1]);
  job.inverse = gpu::device_address(outputs[2]);
  job.counts = gpu::device_address(outputs[3]);
  gpu::SortLauncher launcher(s, job.key);
  sortplan::unique(launcher, job);
}

}  // namespace kiln
