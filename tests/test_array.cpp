#include "kiln/host_writes.h"
#include "test_utils.h"

using namespace kiln;

TEST(Array, Scalars) {
  array a(3.5f);
  EXPECT_EQ(a.ndim(), 0u);
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(a.dtype(), float32);
  EXPECT_EQ(a.item<float>(), 3.5f);
  EXPECT_EQ(a.item<int>(), 3);
  array b(7, int64);
  EXPECT_EQ(b.dtype(), int64);
  EXPECT_EQ(b.item<int64_t>(), 7);
  array c(true);
  EXPECT_EQ(c.dtype(), bool_);
  EXPECT_EQ(array(2.5, float16).item<float>(), 2.5f);
  EXPECT_EQ(array(complex64_t(1, 2)).item<complex64_t>(), complex64_t(1, 2));
}

TEST(Array, InitializerListsAndData) {
  array a({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.strides(), (Strides{3, 1}));
  EXPECT_EQ(a.dtype(), int32);
  EXPECT_EQ(a.nbytes(), 24u);
  EXPECT_EQ(a.itemsize(), 4u);
  EXPECT_TRUE(a.flags().row_contiguous);
  EXPECT_FALSE(a.flags().col_contiguous);
  EXPECT_EQ(a.data<int32_t>()[4], 5);
  EXPECT_EQ(a.shape(-1), 3);
  EXPECT_THROW(a.shape(2), std::invalid_argument);

  array f({1.5f, 2.5f}, float16);
  EXPECT_EQ(f.dtype(), float16);
  EXPECT_EQ(float(f.data<float16_t>()[1]), 2.5f);

  std::vector<double> v{1, 2, 3, 4};
  array d(v.begin(), {2, 2}, float32);
  EXPECT_EQ(d.data<float>()[3], 4.0f);
  EXPECT_THROW(array({1, 2, 3}, {2, 2}), std::invalid_argument);
  EXPECT_THROW(array({1, 2}, {-1, -2}), std::invalid_argument);
  EXPECT_THROW(array({1, 2}).item<int>(), std::invalid_argument);
}

TEST(Array, WrapsExternalMemoryWithoutCopying) {
  static int freed = 0;
  float* buf = new float[4]{1, 2, 3, 4};
  {
    array a(buf, {4}, float32, [](void* p) {
      delete[] static_cast<float*>(p);
      ++freed;
    });
    EXPECT_EQ(a.data<float>(), buf);
    EXPECT_FALSE(a.is_donatable());  // memory kiln does not own is never reused
  }
  EXPECT_EQ(freed, 1);
}

TEST(Array, EmptyArrays) {
  array e(static_cast<float*>(nullptr), {0, 3}, float32);
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.nbytes(), 0u);
}

TEST(Array, LayoutFlags) {
  auto [f1, n1] = array::layout({2, 3}, {1, 2});
  EXPECT_TRUE(f1.col_contiguous);
  EXPECT_FALSE(f1.row_contiguous);
  EXPECT_TRUE(f1.contiguous);
  EXPECT_EQ(n1, 6u);
  auto [f2, n2] = array::layout({2, 3}, {0, 1});  // broadcast rows
  EXPECT_FALSE(f2.contiguous);
  EXPECT_EQ(n2, 3u);
  auto [f3, n3] = array::layout({2, 3, 4}, {4, 8, 1});  // a permutation of a dense block
  EXPECT_TRUE(f3.contiguous);
  EXPECT_FALSE(f3.row_contiguous || f3.col_contiguous);
  auto [f4, n4] = array::layout({3}, {2});  // every other element
  EXPECT_FALSE(f4.contiguous);
  EXPECT_EQ(n4, 5u);
  auto [f5, n5] = array::layout({3}, {-1});  // reversed
  EXPECT_FALSE(f5.contiguous);
}

// A writable host view handed to Python (host_writes::add_writer) makes the host copy the
// reference: the GPU refreshes its copy while the view lives and once after it is released.
TEST(Array, HostWritersAskForDeviceRefreshes) {
  auto st = Storage::host(64);
  EXPECT_FALSE(st->host_writable());
  EXPECT_FALSE(host_writes::take_refresh(*st)) << "an ordinary buffer is immutable";
  host_writes::add_writer(*st);
  host_writes::add_writer(*st);
  EXPECT_TRUE(st->host_writable());
  EXPECT_TRUE(host_writes::take_refresh(*st));
  EXPECT_TRUE(host_writes::take_refresh(*st)) << "every read refreshes while a writer lives";
  host_writes::remove_writer(*st);
  EXPECT_TRUE(host_writes::take_refresh(*st)) << "one writer is still alive";
  host_writes::remove_writer(*st);
  EXPECT_TRUE(host_writes::take_refresh(*st)) << "the last writer's writes are still unseen";
  EXPECT_FALSE(host_writes::take_refresh(*st)) << "after that refresh it is immutable again";
  host_writes::add_writer(*st);
  st.reset();  // a storage that dies with a writer leaves no entry behind (~Storage)
  auto other = Storage::host(64);
  EXPECT_FALSE(host_writes::take_refresh(*other));
}
