// The .npy header, shared by the .npy and .npz readers and writers.
#pragma once

#include <string>
#include <vector>

#include "kiln/io/common.h"

namespace kiln::io {

struct NpyHeader {
  Dtype dtype = float32;
  std::vector<int64_t> shape;  // as written (column-major arrays: not yet reversed)
  bool fortran_order = false;
  bool big_endian = false;
  size_t data_offset = 0;  // bytes from the start of the .npy data
  size_t nbytes = 0;
};

/** Parses and checks the magic, version and header dict of the .npy at the start of `in`.
 * Throws std::runtime_error "[load] ..." for a malformed header and std::invalid_argument
 * "[load] ..." for a dtype kiln has no counterpart for. */
NpyHeader read_npy_header(Reader& in);

/** The array described by `h`, with `data` holding its bytes as stored (row-major, or
 * column-major for fortran_order): a transposed view for fortran_order (on `s`, or the
 * CPU's default stream). */
array npy_array(const NpyHeader& h, array data, StreamOrDevice s);

/** The magic, version, header length and padded header dict for `a` (row-major unless
 * `fortran`), ending 64-byte aligned as NumPy writes it. */
std::string npy_header(const array& a, bool fortran);

/** What `save` writes for `a` (after contiguous_for_save), header then data, into `out`. */
void write_npy(Writer& out, const array& a);

}  // namespace kiln::io
