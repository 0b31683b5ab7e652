// LAPACK's Fortran entry points, as OpenBLAS exports them (no LAPACKE needed), wrapped in
// overloads by element type. Column-major; 32-bit integers (Debian's OpenBLAS is LP64).
// Character arguments carry gfortran's hidden length arguments (size_t), passed as 1.
#pragma once

#include <complex>
#include <cstddef>

extern "C" {
using kiln_c64 = std::complex<float>;
using kiln_c128 = std::complex<double>;
#define KILN_LAPACK_REAL(P, T)                                                                   \
  void P##getrf_(const int*, const int*, T*, const int*, int*, int*);                            \
  void P##getri_(const int*, T*, const int*, const int*, T*, const int*, int*);                  \
  void P##getrs_(const char*, const int*, const int*, const T*, const int*, const int*, T*,      \
                 const int*, int*, size_t);                                                      \
  void P##potrf_(const char*, const int*, T*, const int*, int*, size_t);                         \
  void P##trtri_(const char*, const char*, const int*, T*, const int*, int*, size_t, size_t);    \
  void P##geqrf_(const int*, const int*, T*, const int*, T*, T*, const int*, int*);              \
  void P##orgqr_(const int*, const int*, const int*, T*, const int*, const T*, T*, const int*,   \
                 int*);                                                                          \
  void P##gesdd_(const char*, const int*, const int*, T*, const int*, T*, T*, const int*, T*,    \
                 const int*, T*, const int*, int*, int*, size_t);                                \
  void P##syevd_(const char*, const char*, const int*, T*, const int*, T*, T*, const int*, int*, \
                 const int*, int*, size_t, size_t);                                              \
  void P##geev_(const char*, const char*, const int*, T*, const int*, T*, T*, T*, const int*,    \
                T*, const int*, T*, const int*, int*, size_t, size_t);
KILN_LAPACK_REAL(s, float)
KILN_LAPACK_REAL(d, double)
#undef KILN_LAPACK_REAL
void cgesdd_(const char*, const int*, const int*, kiln_c64*, const int*, float*, kiln_c64*,
             const int*, kiln_c64*, const int*, kiln_c64*, const int*, float*, int*, int*, size_t);
void cheevd_(const char*, const char*, const int*, kiln_c64*, const int*, float*, kiln_c64*,
             const int*, float*, const int*, int*, const int*, int*, size_t, size_t);
void cgeev_(const char*, const char*, const int*, kiln_c64*, const int*, kiln_c64*, kiln_c64*,
            const int*, kiln_c64*, const int*, kiln_c64*, const int*, float*, int*, size_t, size_t);
}

namespace kiln::cpu::lapack {

#define KILN_LAPACK_WRAP(P, T)                                                                    \
  inline int getrf(int m, int n, T* a, int lda, int* ipiv) {                                      \
    int info = 0;                                                                                 \
    P##getrf_(&m, &n, a, &lda, ipiv, &info);                                                      \
    return info;                                                                                  \
  }                                                                                               \
  inline int getri(int n, T* a, int lda, const int* ipiv, T* work, int lwork) {                  \
    int info = 0;                                                                                 \
    P##getri_(&n, a, &lda, ipiv, work, &lwork, &info);                                            \
    return info;                                                                                  \
  }                                                                                               \
  inline int getrs(int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb) {       \
    int info = 0;                                                                                 \
    P##getrs_("N", &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);                                  \
    return info;                                                                                  \
  }                                                                                               \
  inline int potrf(char uplo, int n, T* a, int lda) {                                             \
    int info = 0;                                                                                 \
    P##potrf_(&uplo, &n, a, &lda, &info, 1);                                                      \
    return info;                                                                                  \
  }                                                                                               \
  inline int trtri(char uplo, int n, T* a, int lda) {                                             \
    int info = 0;                                                                                 \
    P##trtri_(&uplo, "N", &n, a, &lda, &info, 1, 1);                                              \
    return info;                                                                                  \
  }                                                                                               \
  inline int geqrf(int m, int n, T* a, int lda, T* tau, T* work, int lwork) {                    \
    int info = 0;                                                                                 \
    P##geqrf_(&m, &n, a, &lda, tau, work, &lwork, &info);                                         \
    return info;                                                                                  \
  }                                                                                               \
  inline int orgqr(int m, int n, int k, T* a, int lda, const T* tau, T* work, int lwork) {       \
    int info = 0;                                                                                 \
    P##orgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, &info);                                     \
    return info;                                                                                  \
  }                                                                                               \
  inline int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt, \
                   T* work, int lwork, T* /*rwork*/, int* iwork) {                                \
    int info = 0;                                                                                 \
    P##gesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, &info, 1);      \
    return info;                                                                                  \
  }                                                                                               \
  inline int syevd(char jobz, char uplo, int n, T* a, int lda, T* w, T* work, int lwork,         \
                   T* /*rwork*/, int /*lrwork*/, int* iwork, int liwork) {                        \
    int info = 0;                                                                                 \
    P##syevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &info, 1, 1);           \
    return info;                                                                                  \
  }
KILN_LAPACK_WRAP(s, float)
KILN_LAPACK_WRAP(d, double)
#undef KILN_LAPACK_WRAP

inline int gesdd(char jobz, int m, int n, kiln_c64* a, int lda, float* s, kiln_c64* u, int ldu,
                 kiln_c64* vt, int ldvt, kiln_c64* work, int lwork, float* rwork, int* iwork) {
  int info = 0;
  cgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, &info, 1);
  return info;
}

inline int syevd(char jobz, char uplo, int n, kiln_c64* a, int lda, float* w, kiln_c64* work,
                 int lwork, float* rwork, int lrwork, int* iwork, int liwork) {
  int info = 0;
  cheevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1);
  return info;
}

}  // namespace kiln::cpu::lapack
