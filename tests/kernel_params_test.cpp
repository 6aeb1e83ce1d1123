// The kernel operations' parameter structs: each writes the positional layout its operation documents (so
// array tasks and their keys are unchanged), reads it back, keeps the defaults of optional fields, and
// refuses a missing or bad field with a KernelError naming the operation and the field — also when a kernel
// is run through the dispatch table.
#include <gtest/gtest.h>

#include <string>

#include "backends/kernel_params.hpp"
#include "expect_error.hpp"

namespace {

namespace b = tessera::backends;
using b::Params;

// `make` throws a KernelError whose message contains `expected`.
template <class F>
void expect_kernel_error(F&& make, const std::string& expected) {
  tessera::testing::expect_error<b::KernelError>(std::forward<F>(make), expected);
}

void expect_layout(const Params& p, const std::string& name, const std::vector<std::int64_t>& ints,
                   const std::vector<double>& reals) {
  EXPECT_EQ(p.name, name);
  EXPECT_EQ(p.ints, ints);
  EXPECT_EQ(p.reals, reals);
}

TEST(KernelParams, RandomWritesItsLayoutAndReadsItBack) {
  const b::RandomParams random{.rows = 3,
                               .cols = 4,
                               .first_row = 30,
                               .first_col = 8,
                               .total_cols = 12,
                               .seed = 99,
                               .dtype = b::DType::float32,
                               .normal = true,
                               .low = 1.5,
                               .high = 2.5,
                               .density = 0.2};
  expect_layout(random.to_params(), "", {3, 4, 30, 8, 12, 99, 1, 1}, {1.5, 2.5, 0.2});
  const auto back = b::RandomParams::from(random.to_params());
  EXPECT_EQ(back.rows, 3);
  EXPECT_EQ(back.cols, 4);
  EXPECT_EQ(back.first_row, 30);
  EXPECT_EQ(back.first_col, 8);
  EXPECT_EQ(back.total_cols, 12);
  EXPECT_EQ(back.seed, 99u);
  EXPECT_EQ(back.dtype, b::DType::float32);
  EXPECT_TRUE(back.normal);
  EXPECT_EQ(back.low, 1.5);
  EXPECT_EQ(back.high, 2.5);
  EXPECT_EQ(back.density, 0.2);
  // The density is optional (dense kernels ignore it).
  EXPECT_EQ(b::RandomParams::from(Params{{}, {3, 4, 0, 0, 4, 1, 0, 0}, {0, 1}}).density, 0.01);
}

TEST(KernelParams, EachOperationWritesTheLayoutItsKernelsRead) {
  expect_layout(b::FullParams{2, 3, b::DType::float64, 7.0}.to_params(), "", {2, 3, 0}, {7.0});
  expect_layout(b::UnaryParams{"exp"}.to_params(), "exp", {}, {});
  expect_layout(b::ScalarParams{"sub", 1.0, true}.to_params(), "sub", {1}, {1.0});
  expect_layout(b::BinaryParams{"mul"}.to_params(), "mul", {}, {});
  const std::vector<b::ChainStep> steps{{b::ChainStep::Kind::unary, "exp", 0, false},
                                        {b::ChainStep::Kind::scalar, "div", 2.0, true}};
  expect_layout(b::ChainParams{steps}.to_params(), "exp,div", {0, 1, 0, 1}, {0, 2.0});
  expect_layout(b::ChainReduceParams{steps, "sumsq", 0}.to_params(), "exp,div|sumsq", {0, 1, 0, 1, 0},
                {0, 2.0});
  expect_layout(b::AstypeParams{b::DType::float32}.to_params(), "", {1}, {});
  expect_layout(b::AssembleParams{4, 2, {{0, 0, 2, 2, 0, 0}, {1, 0, 2, 2, 2, 0}}}.to_params(), "",
                {4, 2, 0, 0, 2, 2, 0, 0, 1, 0, 2, 2, 2, 0}, {});
  expect_layout(b::MatmulParams{true, false}.to_params(), "", {1, 0}, {});
  expect_layout(b::ReduceParams{"max", 1}.to_params(), "max", {1}, {});
  expect_layout(b::ArgreduceParams{"argmin", -1, 10, 20, 30}.to_params(), "argmin", {-1, 10, 20, 30}, {});
  expect_layout(b::CombineParams{"sum", -1}.to_params(), "sum", {-1}, {});
  expect_layout(b::ScaleColumnsParams{true}.to_params(), "", {1}, {});
  expect_layout(b::QrDescendParams{{{0, 3}, {3, 2}}}.to_params(), "", {0, 3, 3, 2}, {});
  expect_layout(b::SvdLeftParams{{{0, 3}}, 100.0}.to_params(), "", {0, 3}, {100.0});
  expect_layout(b::GlmPartialsParams{b::glm::Family::poisson, 2}.to_params(), "", {2, 2}, {});
}

TEST(KernelParams, EachOperationReadsBackWhatItWrote) {
  const auto chain = b::ChainReduceParams::from(
      b::ChainReduceParams{{{b::ChainStep::Kind::scalar, "add", 0.5, true}}, "min", 1}.to_params());
  ASSERT_EQ(chain.steps.size(), 1u);
  EXPECT_EQ(chain.steps[0].kind, b::ChainStep::Kind::scalar);
  EXPECT_EQ(chain.steps[0].function, "add");
  EXPECT_EQ(chain.steps[0].scalar, 0.5);
  EXPECT_TRUE(chain.steps[0].scalar_left);
  EXPECT_EQ(chain.reduction, "min");
  EXPECT_EQ(chain.axis, 1);

  const auto assemble = b::AssembleParams::from(b::AssembleParams{5, 6, {{1, 2, 3, 4, 0, 1}}}.to_params());
  EXPECT_EQ(assemble.rows, 5);
  EXPECT_EQ(assemble.cols, 6);
  ASSERT_EQ(assemble.blocks.size(), 1u);
  EXPECT_EQ(assemble.blocks[0].src_col, 2);
  EXPECT_EQ(assemble.blocks[0].dst_col, 1);

  const auto arg = b::ArgreduceParams::from(b::ArgreduceParams{"argmax", 0, 10, 20, 30}.to_params());
  EXPECT_EQ(arg.reduction, "argmax");
  EXPECT_EQ(arg.first_row, 10);
  EXPECT_EQ(arg.total_cols, 30);

  const auto left = b::SvdLeftParams::from(b::SvdLeftParams{{{4, 2}}, 4.0}.to_params());
  ASSERT_EQ(left.levels.size(), 1u);
  EXPECT_EQ(left.levels[0].offset, 4);
  EXPECT_EQ(left.levels[0].rows, 2);
  EXPECT_EQ(left.max_condition, 4.0);

  const auto glm = b::GlmPartialsParams::from(b::GlmPartialsParams{b::glm::Family::normal, 1}.to_params());
  EXPECT_EQ(glm.family, b::glm::Family::normal);
  EXPECT_EQ(glm.order, 1);
}

TEST(KernelParams, OptionalFieldsKeepTheirDefaults) {
  const auto matmul = b::MatmulParams::from(Params{});
  EXPECT_FALSE(matmul.transpose_a);
  EXPECT_FALSE(matmul.transpose_b);
  EXPECT_FALSE(b::ScalarParams::from(Params{"mul", {}, {2.0}}).scalar_left);
  EXPECT_FALSE(b::ScaleColumnsParams::from(Params{}).divide);
  EXPECT_EQ(b::SvdLeftParams::from(Params{}).max_condition, 0.0);
}

TEST(KernelParams, AMissingFieldNamesTheOperationAndTheField) {
  expect_kernel_error(
      [] {
        b::RandomParams::from(Params{{}, {3, 4, 0, 0}, {0, 1}});
      },
      "random: total_cols is missing (integer 4, 4 given)");
  expect_kernel_error(
      [] {
        b::RandomParams::from(Params{{}, {3, 4, 0, 0, 4, 1, 0, 0}, {0}});
      },
      "random: high is missing (real 1, 1 given)");
  expect_kernel_error([] { b::FullParams::from(Params{{}, {3, 4, 0}, {}}); }, "full: value is missing");
  expect_kernel_error([] { b::ScalarParams::from(Params{"add", {0}, {}}); }, "scalar: scalar is missing");
  expect_kernel_error([] { b::UnaryParams::from(Params{}); }, "unary: function is missing");
  expect_kernel_error([] { b::ReduceParams::from(Params{"sum", {}, {}}); }, "reduce: axis is missing");
  expect_kernel_error(
      [] {
        b::ArgreduceParams::from(Params{"argmax", {0, 0, 0}, {}});
      },
      "argreduce: total_cols is missing");
  expect_kernel_error([] { b::CombineParams::from(Params{{}, {0}, {}}); }, "combine: reduction is missing");
  expect_kernel_error([] { b::AstypeParams::from(Params{}); }, "astype: dtype is missing");
  expect_kernel_error([] { b::AssembleParams::from(Params{{}, {4}, {}}); }, "assemble: cols is missing");
  expect_kernel_error(
      [] {
        b::GlmPartialsParams::from(Params{{}, {0}, {}});
      },
      "glm_partials: order is missing");
  expect_kernel_error(
      [] {
        b::ChainReduceParams::from(Params{"exp", {0, 0}, {0}});
      },
      "chain_reduce: no reduction given");
}

TEST(KernelParams, ABadFieldNamesTheOperationAndTheField) {
  expect_kernel_error(
      [] {
        b::RandomParams::from(Params{{}, {3, 4, 0, 0, 4, 1, 7, 0}, {0, 1}});
      },
      "random: dtype must be 0 (float64) or 1 (float32), got 7");
  expect_kernel_error(
      [] {
        b::ReduceParams::from(Params{"sum", {3}, {}});
      },
      "reduce: axis must be 0, 1 or -1 (all), got 3");
  expect_kernel_error(
      [] {
        b::ChainParams::from(Params{"exp,log", {0, 0, 0}, {0, 0}});
      },
      "chain: 2 steps need 4 integers and 2 reals, got 3 and 2");
  expect_kernel_error(
      [] {
        b::ChainParams::from(Params{"exp", {5, 0}, {0}});
      },
      "chain: the kind of step 0 must be 0 (unary) or 1 (scalar), got 5");
  expect_kernel_error(
      [] {
        b::ChainReduceParams::from(Params{"exp|median", {0, 0, 0}, {0}});
      },
      "chain_reduce: unknown reduction 'median'");
  expect_kernel_error(
      [] {
        b::AssembleParams::from(Params{{}, {4, 2, 0, 0, 2}, {}});
      },
      "assemble: blocks are six integers each");
  expect_kernel_error(
      [] {
        b::QrDescendParams::from(Params{{}, {0, 3, 3}, {}});
      },
      "qr_descend: levels are (offset, rows) pairs, got 3 integers");
  expect_kernel_error(
      [] {
        b::GlmPartialsParams::from(Params{{}, {7, 0}, {}});
      },
      "glm_partials: unknown family 7");
  expect_kernel_error(
      [] {
        b::GlmPartialsParams::from(Params{{}, {0, 3}, {}});
      },
      "glm_partials: order must be 0, 1 or 2, got 3");
}

// A kernel reads its struct: a missing field surfaces from the dispatch table with the same names.
TEST(KernelParams, AKernelRunWithAMissingFieldSaysWhichOne) {
  auto& dispatch = b::Dispatch::global();
  expect_kernel_error(
      [&] {
        dispatch.run(b::ops::full, {}, Params{{}, {2, 2}, {1.0}});
      },
      "full: dtype is missing");
  const b::ChunkPtr chunk = b::Chunk::dense<double>(Eigen::MatrixXd::Ones(2, 2));
  expect_kernel_error(
      [&] {
        dispatch.run(b::ops::reduce, std::span(&chunk, 1), Params{"sum", {}, {}});
      },
      "reduce: axis is missing");
  const auto sum = dispatch.run(b::ops::reduce, std::span(&chunk, 1), b::ReduceParams{"sum", -1}.to_params());
  EXPECT_EQ(sum.at(0)->dense<double>()(0, 0), 4.0);
}

}  // namespace
