// Dense products and factorizations on the device: matmul through cuBLAS, QR and SVD through cuSOLVER,
// with the cpu kernels' shapes, checks and error messages.
#include "backends/cuda/blas.hpp"
#include "backends/cuda/device_kernels.hpp"
#include "backends/cuda/kernel_util.hpp"
#include "backends/kernel_params.hpp"
#include "backends/operations.hpp"

namespace tessera::backends::cuda {
namespace {

cublasOperation_t operation(bool transpose) {
  return transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
}

// A typed device workspace of `count` elements (at least one, so its pointer is never null).
template <class T>
struct Workspace {
  Workspace(const KernelStream& stream, std::int64_t count)
      : buffer(stream, static_cast<std::size_t>(std::max<std::int64_t>(1, count)) * sizeof(T)) {}
  T* data() { return static_cast<T*>(buffer.mutable_data()); }
  DeviceBuffer buffer;
};

// Waits for the stream, then throws as cpu/lapack.hpp's check does when cuSOLVER's info is not 0.
void check_info(const KernelStream& stream, Workspace<int>& info, const char* routine) {
  int host_info = 0;
  check_cuda(cudaMemcpyAsync(&host_info, info.data(), sizeof(int), cudaMemcpyDeviceToHost, stream.stream()),
             "cudaMemcpyAsync(device to host)");
  stream.synchronize();
  if (host_info != 0)
    throw KernelError(std::string(routine) + " failed with info " + std::to_string(host_info) +
                      (host_info > 0 ? " (did not converge)" : " (bad argument)"));
}

template <class T>
void copy_elements(const KernelStream& stream, T* destination, const T* source, std::int64_t count) {
  if (count > 0)
    check_cuda(cudaMemcpyAsync(destination, source, static_cast<std::size_t>(count) * sizeof(T),
                               cudaMemcpyDeviceToDevice, stream.stream()),
               "cudaMemcpyAsync(device to device)");
}

Chunks matmul(std::span<const ChunkPtr> in, const Params& params) {
  const auto p = MatmulParams::from(params);
  const bool ta = p.transpose_a, tb = p.transpose_b;
  cpu::check_matmul_pairs(in, ta, tb);
  const std::size_t k = in.size() / 2;
  const auto rows = ta ? in[0]->cols() : in[0]->rows();
  const auto cols = tb ? in[k]->rows() : in[k]->cols();
  KernelStream stream(input_device("matmul", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    DeviceOutput<T> out(stream, rows, cols);
    if (rows > 0 && cols > 0) {
      bool written = false;  // the first product overwrites (beta 0), the others accumulate (beta 1)
      for (std::size_t i = 0; i < k; ++i) {
        const auto& a = *in[i];
        const auto& b = *in[k + i];
        const auto inner = ta ? a.rows() : a.cols();
        if (inner == 0) continue;
        blas::gemm(stream.blas(), operation(ta), operation(tb), blas_int(rows, "matmul"),
                   blas_int(cols, "matmul"), blas_int(inner, "matmul"), T(1), device_data<T>(a, "matmul"),
                   leading_dimension(a.rows(), "matmul"), device_data<T>(b, "matmul"),
                   leading_dimension(b.rows(), "matmul"), written ? T(1) : T(0), out.data(),
                   leading_dimension(rows, "matmul"));
        written = true;
      }
      if (!written)  // every inner dimension was 0: the sum of empty products
        check_cuda(cudaMemsetAsync(out.data(), 0, static_cast<std::size_t>(rows * cols) * sizeof(T),
                                   stream.stream()),
                   "cudaMemsetAsync");
    }
    stream.finish();
    return out.chunk();
  })};
}

Chunks qr_factor(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_factor", in, 1);
  KernelStream stream(input_device("qr_factor", in));
  return with_dtype(in[0]->dtype(), [&](auto t) -> Chunks {
    using T = decltype(t);
    const auto m = in[0]->rows(), n = in[0]->cols();
    DeviceOutput<T> packed(stream, m, n);
    DeviceOutput<T> tau(stream, std::min(m, n), 1);
    copy_elements(stream, packed.data(), device_data<T>(*in[0], "qr_factor"), m * n);
    if (m > 0 && n > 0) {
      const int rows = blas_int(m, "qr_factor"), cols = blas_int(n, "qr_factor");
      const int lwork = solver::geqrf_workspace(stream.solver(), rows, cols, packed.data(), rows);
      Workspace<T> work(stream, lwork);
      Workspace<int> info(stream, 1);
      solver::geqrf(stream.solver(), rows, cols, packed.data(), rows, tau.data(), work.data(), lwork,
                    info.data());
      check_info(stream, info, "geqrf");
    }
    stream.finish();
    return {packed.chunk(), tau.chunk()};
  });
}

Chunks qr_r(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_r", in, 1);
  KernelStream stream(input_device("qr_r", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto m = in[0]->rows(), n = in[0]->cols(), k = std::min(m, n);
    DeviceOutput<T> r(stream, k, n);
    launch_upper_triangle<T>(device_data<T>(*in[0], "qr_r"), m, r.data(), k, n, stream.stream());
    stream.finish();
    return r.chunk();
  })};
}

Chunks qr_q(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_q", in, 2);
  KernelStream stream(input_device("qr_q", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto m = in[0]->rows(), k = std::min(in[0]->rows(), in[0]->cols());
    if (in[1]->size() < k)
      throw KernelError("qr_q: " + std::to_string(in[1]->size()) + " Householder scalars for " +
                        std::to_string(k) + " reflectors");
    DeviceOutput<T> q(stream, m, k);
    // Column-major: the first k columns of the packed factor are its first m * k elements.
    copy_elements(stream, q.data(), device_data<T>(*in[0], "qr_q"), m * k);
    if (m > 0 && k > 0) {
      const int rows = blas_int(m, "qr_q"), reflectors = blas_int(k, "qr_q");
      const T* tau = device_data<T>(*in[1], "qr_q");
      const int lwork =
          solver::orgqr_workspace(stream.solver(), rows, reflectors, reflectors, q.data(), rows, tau);
      Workspace<T> work(stream, lwork);
      Workspace<int> info(stream, 1);
      solver::orgqr(stream.solver(), rows, reflectors, reflectors, q.data(), rows, tau, work.data(), lwork,
                    info.data());
      check_info(stream, info, "orgqr");
    }
    stream.finish();
    return q.chunk();
  })};
}

Chunks qr_apply(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("qr_apply", in, 3);
  KernelStream stream(input_device("qr_apply", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const Chunk& c_in = *in[2];
    const auto m = in[0]->rows(), k = in[1]->rows();
    if (c_in.rows() > m)
      throw KernelError("qr_apply: " + shape_text(c_in.rows(), c_in.cols()) + " has more rows than Q's " +
                        std::to_string(m));
    if (k > std::min(m, in[0]->cols()))
      throw KernelError("qr_apply: " + std::to_string(k) + " Householder scalars for a " +
                        shape_text(m, in[0]->cols()) + " factor");
    // C padded with zero rows to m: [C; 0].
    DeviceOutput<T> c(stream, m, c_in.cols());
    const T* c_data = device_data<T>(c_in, "qr_apply");
    if (c_in.rows() == m) {
      copy_elements(stream, c.data(), c_data, m * c_in.cols());
    } else if (m * c_in.cols() > 0) {
      check_cuda(cudaMemsetAsync(c.data(), 0, static_cast<std::size_t>(m * c_in.cols()) * sizeof(T),
                                 stream.stream()),
                 "cudaMemsetAsync");
      if (c_in.size() > 0)
        check_cuda(cudaMemcpy2DAsync(c.data(), static_cast<std::size_t>(m) * sizeof(T), c_data,
                                     static_cast<std::size_t>(c_in.rows()) * sizeof(T),
                                     static_cast<std::size_t>(c_in.rows()) * sizeof(T),
                                     static_cast<std::size_t>(c_in.cols()), cudaMemcpyDeviceToDevice,
                                     stream.stream()),
                   "cudaMemcpy2DAsync");
    }
    if (m > 0 && k > 0 && c_in.cols() > 0) {
      const int rows = blas_int(m, "qr_apply"), cols = blas_int(c_in.cols(), "qr_apply");
      const int reflectors = blas_int(k, "qr_apply");
      const T* packed = device_data<T>(*in[0], "qr_apply");
      const T* tau = device_data<T>(*in[1], "qr_apply");
      const int lwork =
          solver::ormqr_workspace(stream.solver(), rows, cols, reflectors, packed, rows, tau, c.data(), rows);
      Workspace<T> work(stream, lwork);
      Workspace<int> info(stream, 1);
      solver::ormqr(stream.solver(), rows, cols, reflectors, packed, rows, tau, c.data(), rows, work.data(),
                    lwork, info.data());
      check_info(stream, info, "ormqr");
    }
    stream.finish();
    return c.chunk();
  })};
}

// The thin SVD of a rows x cols matrix with rows >= cols, which cuSOLVER's gesvd requires; `a` is destroyed.
template <class T>
void thin_svd(const KernelStream& stream, std::int64_t rows, std::int64_t cols, T* a, T* s, T* u, T* vt) {
  const int m = blas_int(rows, "svd"), n = blas_int(cols, "svd");
  const int lwork = solver::gesvd_workspace(stream.solver(), m, n, T{});
  Workspace<T> work(stream, lwork);
  Workspace<T> unconverged(stream, n);  // gesvd's rwork: the unconverged superdiagonal when info > 0
  Workspace<int> info(stream, 1);
  solver::gesvd(stream.solver(), m, n, a, m, s, u, m, vt, n, work.data(), lwork, unconverged.data(),
                info.data());
  check_info(stream, info, "gesvd");
}

Chunks svd(std::span<const ChunkPtr> in, const Params&) {
  require_inputs("svd", in, 1);
  KernelStream stream(input_device("svd", in));
  return with_dtype(in[0]->dtype(), [&](auto t) -> Chunks {
    using T = decltype(t);
    const auto m = in[0]->rows(), n = in[0]->cols(), k = std::min(m, n);
    const T* a = device_data<T>(*in[0], "svd");
    DeviceOutput<T> u(stream, m, k), s(stream, k, 1), vt(stream, k, n);
    if (k > 0) {
      Workspace<unsigned int> nonfinite(stream, 1);
      check_cuda(cudaMemsetAsync(nonfinite.data(), 0, sizeof(unsigned int), stream.stream()),
                 "cudaMemsetAsync");
      launch_find_nonfinite<T>(a, m * n, nonfinite.data(), stream.stream());
      unsigned int found = 0;
      check_cuda(
          cudaMemcpyAsync(&found, nonfinite.data(), sizeof(found), cudaMemcpyDeviceToHost, stream.stream()),
          "cudaMemcpyAsync(device to host)");
      stream.synchronize();
      if (found) throw KernelError("svd: the matrix holds NaN or infinity");
      if (m >= n) {
        Workspace<T> a_copy(stream, m * n);
        copy_elements(stream, a_copy.data(), a, m * n);
        thin_svd<T>(stream, m, n, a_copy.data(), s.data(), u.data(), vt.data());
      } else {
        // A^T (n x m, tall) = U' S Vt', so A = Vt'^T S U'^T: U = (Vt')^T and Vt = U'^T.
        Workspace<T> a_transposed(stream, n * m), u_of_transpose(stream, n * k),
            vt_of_transpose(stream, k * k);
        blas::transpose(stream.blas(), blas_int(n, "svd"), blas_int(m, "svd"), a, blas_int(m, "svd"),
                        a_transposed.data(), blas_int(n, "svd"));
        thin_svd<T>(stream, n, m, a_transposed.data(), s.data(), u_of_transpose.data(),
                    vt_of_transpose.data());
        blas::transpose(stream.blas(), blas_int(m, "svd"), blas_int(k, "svd"), vt_of_transpose.data(),
                        blas_int(k, "svd"), u.data(), blas_int(m, "svd"));
        blas::transpose(stream.blas(), blas_int(k, "svd"), blas_int(n, "svd"), u_of_transpose.data(),
                        blas_int(n, "svd"), vt.data(), blas_int(k, "svd"));
      }
    }
    stream.finish();
    return {u.chunk(), s.chunk(), vt.chunk()};
  });
}

Chunks scale_columns(std::span<const ChunkPtr> in, const Params& params) {
  require_inputs("scale_columns", in, 2);
  const bool divide = ScaleColumnsParams::from(params).divide;
  KernelStream stream(input_device("scale_columns", in));
  return {with_dtype(in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const auto rows = in[0]->rows(), cols = in[0]->cols();
    if (in[1]->size() != cols)
      throw KernelError("scale_columns: " + std::to_string(in[1]->size()) + " scales for " +
                        std::to_string(cols) + " columns");
    DeviceOutput<T> out(stream, rows, cols);
    launch_scale_columns<T>(device_data<T>(*in[0], "scale_columns"), rows, cols,
                            device_data<T>(*in[1], "scale_columns"), divide, out.data(), stream.stream());
    stream.finish();
    return out.chunk();
  })};
}

}  // namespace

void register_linalg(Dispatch& d) {
  d.add(ops::matmul, Backend::cuda, matmul);
  d.add(ops::qr_factor, Backend::cuda, qr_factor);
  d.add(ops::qr_r, Backend::cuda, qr_r);
  d.add(ops::qr_q, Backend::cuda, qr_q);
  d.add(ops::qr_apply, Backend::cuda, qr_apply);
  d.add(ops::svd, Backend::cuda, svd);
  d.add(ops::scale_columns, Backend::cuda, scale_columns);
}

}  // namespace tessera::backends::cuda
