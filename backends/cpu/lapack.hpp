// Overloads of the LAPACKE routines the cpu kernels use, so kernels are written once for float and double.
#pragma once

#include <lapacke.h>

#include <string>

#include "backends/chunk.hpp"

namespace tessera::backends::cpu::lapack {

inline lapack_int geqrf(lapack_int m, lapack_int n, double* a, lapack_int lda, double* tau) {
  return LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
}
inline lapack_int geqrf(lapack_int m, lapack_int n, float* a, lapack_int lda, float* tau) {
  return LAPACKE_sgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
}
inline lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, double* a, lapack_int lda,
                        const double* tau) {
  return LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
}
inline lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, float* a, lapack_int lda,
                        const float* tau) {
  return LAPACKE_sorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
}
inline lapack_int ormqr(lapack_int m, lapack_int n, lapack_int k, const double* a, lapack_int lda,
                        const double* tau, double* c, lapack_int ldc) {
  return LAPACKE_dormqr(LAPACK_COL_MAJOR, 'L', 'N', m, n, k, a, lda, tau, c, ldc);
}
inline lapack_int ormqr(lapack_int m, lapack_int n, lapack_int k, const float* a, lapack_int lda,
                        const float* tau, float* c, lapack_int ldc) {
  return LAPACKE_sormqr(LAPACK_COL_MAJOR, 'L', 'N', m, n, k, a, lda, tau, c, ldc);
}
inline lapack_int gesdd(lapack_int m, lapack_int n, double* a, lapack_int lda, double* s, double* u,
                        lapack_int ldu, double* vt, lapack_int ldvt) {
  return LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', m, n, a, lda, s, u, ldu, vt, ldvt);
}
inline lapack_int gesdd(lapack_int m, lapack_int n, float* a, lapack_int lda, float* s, float* u,
                        lapack_int ldu, float* vt, lapack_int ldvt) {
  return LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'S', m, n, a, lda, s, u, ldu, vt, ldvt);
}
// Eigenvalues (ascending) and, in place of a, the eigenvectors of a symmetric matrix (its lower triangle).
inline lapack_int syevd(lapack_int n, double* a, lapack_int lda, double* w) {
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', n, a, lda, w);
}
inline lapack_int syevd(lapack_int n, float* a, lapack_int lda, float* w) {
  return LAPACKE_ssyevd(LAPACK_COL_MAJOR, 'V', 'L', n, a, lda, w);
}

inline void check(lapack_int info, const char* routine) {
  if (info != 0)
    throw KernelError(std::string(routine) + " failed with info " + std::to_string(info) +
                      (info > 0 ? " (did not converge)" : " (bad argument)"));
}

}  // namespace tessera::backends::cpu::lapack
