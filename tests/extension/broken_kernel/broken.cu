// A kernel with a type error on line 5.
extern "C" __global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = undeclared_factor * x[i];
  }
}
