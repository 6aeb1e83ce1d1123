// Hot loops built for x86-64-v4 (AVX-512) in their own shared library, libtessera_wide_kernels (see
// glm_partials_v4.cpp for why it is a library of its own). Call them only where
// backends/cpu/cpu_features.hpp says the CPU runs them. Plain C types: the library's Eigen is built with
// other alignment and vector settings than the caller's, so no Eigen object crosses.
#pragma once

#include <cstdint>

extern "C" {

// dense_pass::dense_partials over a column-major float64 X (rows x cols), y (rows) and beta (cols + 1):
// writes loss, gradient (cols + 1) and, for order 2, hessian ((cols + 1)^2, column-major). 0 on success;
// 1 when it could not allocate its buffers (nothing written).
__attribute__((visibility("default"))) int tessera_wide_glm_partials_f64(
    const double* x, std::int64_t rows, std::int64_t cols, const double* y, const double* beta, int family,
    int order, double* loss, double* gradient, double* hessian) noexcept;
}
