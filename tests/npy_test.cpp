// .npy files: arrays written and read back in both element types and both orders, chunk by chunk; files
// as NumPy writes them (C order, format 1.0 and 2.0); and bad files refused at the call, naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tessera/array.hpp>
#include <tessera/io.hpp>
#include <tessera/tessera.hpp>

namespace {

namespace fs = std::filesystem;
using tessera::Array;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("tessera-npy-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }

  // A C-order file as numpy.save writes it (header padded to 64 bytes, version `major`).
  void write_c_order(const std::string& file, const Eigen::MatrixXd& m, int major = 1) const {
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(m.rows()) +
                         ", " + std::to_string(m.cols()) + "), }";
    const std::size_t prefix = major == 1 ? 10 : 12;
    header.append(((prefix + header.size() + 1 + 63) / 64) * 64 - prefix - header.size() - 1, ' ');
    header.push_back('\n');
    std::ofstream out(file, std::ios::binary);
    out.write("\x93NUMPY", 6);
    out.put(static_cast<char>(major));
    out.put(0);
    const std::uint32_t length = static_cast<std::uint32_t>(header.size());
    out.write(reinterpret_cast<const char*>(&length), major == 1 ? 2 : 4);
    out << header;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      for (Eigen::Index j = 0; j < m.cols(); ++j) out.write(reinterpret_cast<const char*>(&m(i, j)), 8);
  }

  fs::path dir;
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
};

TEST_F(NpyTest, WrittenArraysReadBackChunkByChunk) {
  const Eigen::MatrixXd m = Eigen::MatrixXd::Random(37, 6);
  tessera::io::to_npy(Array::from_eigen(m, {.chunks = {10, 4}}), path("m.npy"), client);
  auto back = tessera::io::from_npy(path("m.npy"), {.chunk_rows = 8, .chunk_cols = 4});
  EXPECT_EQ(back.chunks(), (std::vector<std::vector<std::int64_t>>{{8, 8, 8, 8, 5}, {4, 2}}));
  EXPECT_EQ(back.compute(client), m);
  tessera::io::to_npy(Array::from_eigen(m).astype("float32"), path("f.npy"), client);
  auto f = tessera::io::from_npy(path("f.npy"), {.chunk_rows = 10});
  EXPECT_EQ(f.meta().dtype, tessera::backends::DType::float32);
  EXPECT_EQ(f.compute(client), m.cast<float>().cast<double>());
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(11, 0, 1);
  tessera::io::to_npy(Array::from_eigen(v), path("v.npy"), client);
  auto vb = tessera::io::from_npy(path("v.npy"), {.chunk_rows = 4});
  EXPECT_EQ(vb.ndim(), 1);
  EXPECT_EQ(vb.compute_vector(client), v);
}

TEST_F(NpyTest, COrderFilesAsNumpyWritesThem) {
  const Eigen::MatrixXd m = Eigen::MatrixXd::Random(23, 5);
  for (int major : {1, 2}) {
    write_c_order(path("c.npy"), m, major);
    EXPECT_EQ(tessera::io::from_npy(path("c.npy"), {.chunk_rows = 7}).compute(client), m)
        << "version " << major;
    EXPECT_EQ(tessera::io::from_npy(path("c.npy"), {.chunk_rows = 7, .chunk_cols = 2}).compute(client), m);
  }
}

TEST_F(NpyTest, BadFilesAreRefusedAtTheCallNamingTheFile) {
  auto expect_error = [&](const std::string& file, const std::string& needle) {
    try {
      (void)tessera::io::from_npy(file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const tessera::SubmissionError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(path("missing.npy"), "cannot be opened");
  std::ofstream(path("text.npy")) << "not numpy at all";
  expect_error(path("text.npy"), "magic");
  write_c_order(path("short.npy"), Eigen::MatrixXd::Random(10, 10));
  fs::resize_file(path("short.npy"), fs::file_size(path("short.npy")) - 8);
  expect_error(path("short.npy"), "promises");
  std::string bytes;
  {
    write_c_order(path("int.npy"), Eigen::MatrixXd::Random(2, 2));
    std::ifstream in(path("int.npy"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.replace(bytes.find("<f8"), 3, "<i8");
  std::ofstream(path("int.npy"), std::ios::binary) << bytes;
  expect_error(path("int.npy"), "'<i8'");
}

}  // namespace
