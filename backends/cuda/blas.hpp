// Overloads of the cuBLAS and cuSOLVER routines the cuda kernels use, so kernels are written once for float
// and double (as cpu/lapack.hpp does for LAPACKE). Each checks its status.
#pragma once

#include "backends/cuda/status.hpp"

namespace tessera::backends::cuda::blas {

inline void gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                 double alpha, const double* a, int lda, const double* b, int ldb, double beta, double* c,
                 int ldc) {
  check_cublas(cublasDgemm(handle, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc), "cublasDgemm");
}
inline void gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                 float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
                 int ldc) {
  check_cublas(cublasSgemm(handle, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc), "cublasSgemm");
}

// c (m x n) = a^T, with a n x m. cuBLAS documents the in-place form C = alpha op(A) + beta C (B == C,
// ldb == ldc); with beta = 0 it does not read C, so c need not be initialized.
inline void transpose(cublasHandle_t handle, int m, int n, const double* a, int lda, double* c, int ldc) {
  const double one = 1, zero = 0;
  check_cublas(cublasDgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, a, lda, &zero, c, ldc, c, ldc),
               "cublasDgeam");
}
inline void transpose(cublasHandle_t handle, int m, int n, const float* a, int lda, float* c, int ldc) {
  const float one = 1, zero = 0;
  check_cublas(cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &one, a, lda, &zero, c, ldc, c, ldc),
               "cublasSgeam");
}

}  // namespace tessera::backends::cuda::blas

namespace tessera::backends::cuda::solver {

inline int geqrf_workspace(cusolverDnHandle_t h, int m, int n, double* a, int lda) {
  int lwork = 0;
  check_cusolver(cusolverDnDgeqrf_bufferSize(h, m, n, a, lda, &lwork), "cusolverDnDgeqrf_bufferSize");
  return lwork;
}
inline int geqrf_workspace(cusolverDnHandle_t h, int m, int n, float* a, int lda) {
  int lwork = 0;
  check_cusolver(cusolverDnSgeqrf_bufferSize(h, m, n, a, lda, &lwork), "cusolverDnSgeqrf_bufferSize");
  return lwork;
}
inline void geqrf(cusolverDnHandle_t h, int m, int n, double* a, int lda, double* tau, double* work,
                  int lwork, int* info) {
  check_cusolver(cusolverDnDgeqrf(h, m, n, a, lda, tau, work, lwork, info), "cusolverDnDgeqrf");
}
inline void geqrf(cusolverDnHandle_t h, int m, int n, float* a, int lda, float* tau, float* work, int lwork,
                  int* info) {
  check_cusolver(cusolverDnSgeqrf(h, m, n, a, lda, tau, work, lwork, info), "cusolverDnSgeqrf");
}

inline int orgqr_workspace(cusolverDnHandle_t h, int m, int n, int k, const double* a, int lda,
                           const double* tau) {
  int lwork = 0;
  check_cusolver(cusolverDnDorgqr_bufferSize(h, m, n, k, a, lda, tau, &lwork), "cusolverDnDorgqr_bufferSize");
  return lwork;
}
inline int orgqr_workspace(cusolverDnHandle_t h, int m, int n, int k, const float* a, int lda,
                           const float* tau) {
  int lwork = 0;
  check_cusolver(cusolverDnSorgqr_bufferSize(h, m, n, k, a, lda, tau, &lwork), "cusolverDnSorgqr_bufferSize");
  return lwork;
}
inline void orgqr(cusolverDnHandle_t h, int m, int n, int k, double* a, int lda, const double* tau,
                  double* work, int lwork, int* info) {
  check_cusolver(cusolverDnDorgqr(h, m, n, k, a, lda, tau, work, lwork, info), "cusolverDnDorgqr");
}
inline void orgqr(cusolverDnHandle_t h, int m, int n, int k, float* a, int lda, const float* tau, float* work,
                  int lwork, int* info) {
  check_cusolver(cusolverDnSorgqr(h, m, n, k, a, lda, tau, work, lwork, info), "cusolverDnSorgqr");
}

// Q C for the Q of a packed QR factor (side left, no transpose).
inline int ormqr_workspace(cusolverDnHandle_t h, int m, int n, int k, const double* a, int lda,
                           const double* tau, const double* c, int ldc) {
  int lwork = 0;
  check_cusolver(
      cusolverDnDormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_N, m, n, k, a, lda, tau, c, ldc, &lwork),
      "cusolverDnDormqr_bufferSize");
  return lwork;
}
inline int ormqr_workspace(cusolverDnHandle_t h, int m, int n, int k, const float* a, int lda,
                           const float* tau, const float* c, int ldc) {
  int lwork = 0;
  check_cusolver(
      cusolverDnSormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_N, m, n, k, a, lda, tau, c, ldc, &lwork),
      "cusolverDnSormqr_bufferSize");
  return lwork;
}
inline void ormqr(cusolverDnHandle_t h, int m, int n, int k, const double* a, int lda, const double* tau,
                  double* c, int ldc, double* work, int lwork, int* info) {
  check_cusolver(
      cusolverDnDormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_N, m, n, k, a, lda, tau, c, ldc, work, lwork, info),
      "cusolverDnDormqr");
}
inline void ormqr(cusolverDnHandle_t h, int m, int n, int k, const float* a, int lda, const float* tau,
                  float* c, int ldc, float* work, int lwork, int* info) {
  check_cusolver(
      cusolverDnSormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_N, m, n, k, a, lda, tau, c, ldc, work, lwork, info),
      "cusolverDnSormqr");
}

// The thin SVD (jobu = jobvt = 'S') of an m x n matrix with m >= n, as cuSOLVER's gesvd requires.
inline int gesvd_workspace(cusolverDnHandle_t h, int m, int n, double) {
  int lwork = 0;
  check_cusolver(cusolverDnDgesvd_bufferSize(h, m, n, &lwork), "cusolverDnDgesvd_bufferSize");
  return lwork;
}
inline int gesvd_workspace(cusolverDnHandle_t h, int m, int n, float) {
  int lwork = 0;
  check_cusolver(cusolverDnSgesvd_bufferSize(h, m, n, &lwork), "cusolverDnSgesvd_bufferSize");
  return lwork;
}
inline void gesvd(cusolverDnHandle_t h, int m, int n, double* a, int lda, double* s, double* u, int ldu,
                  double* vt, int ldvt, double* work, int lwork, double* rwork, int* info) {
  check_cusolver(cusolverDnDgesvd(h, 'S', 'S', m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, info),
                 "cusolverDnDgesvd");
}
inline void gesvd(cusolverDnHandle_t h, int m, int n, float* a, int lda, float* s, float* u, int ldu,
                  float* vt, int ldvt, float* work, int lwork, float* rwork, int* info) {
  check_cusolver(cusolverDnSgesvd(h, 'S', 'S', m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, info),
                 "cusolverDnSgesvd");
}

}  // namespace tessera::backends::cuda::solver
