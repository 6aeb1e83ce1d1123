// The dense GLM pass built for x86-64-v4 (AVX-512) with Eigen's own products instead of OpenBLAS's
// (whose Debian build runs Haswell kernels here): a 1e6 x 100 logistic evaluation's passes over X take
// about two thirds of the time. glm_partials.cpp calls it only where the CPU has AVX-512.
//
// This library exports wide_kernels.hpp's functions and nothing else (exports.map): its Eigen and
// standard-library instantiations, compiled for AVX-512, must never stand in for the portable ones that
// other libraries use, or a CPU without AVX-512 would run them.
#include "backends/cpu/wide/wide_kernels.hpp"

#include "backends/cpu/glm_dense_pass.hpp"

extern "C" int tessera_wide_glm_partials_f64(const double* x, std::int64_t rows, std::int64_t cols,
                                             const double* y, const double* beta, int family, int order,
                                             double* loss, double* gradient, double* hessian) noexcept {
  try {
    const Eigen::Map<const Eigen::MatrixXd> x_matrix(x, rows, cols);
    const Eigen::Map<const Eigen::MatrixXd> y_matrix(y, rows, 1);
    tessera::backends::glm::dense_pass::dense_partials(x_matrix, y_matrix, beta, family, order, loss,
                                                       gradient, hessian);
    return 0;
  } catch (...) {  // std::bad_alloc: the caller runs the portable pass instead
    return 1;
  }
}
