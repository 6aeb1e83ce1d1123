// The GLM messages on the wire: every kind round-trips with its fields, large vectors travel as frames
// beside the header, and a hostile message — an unknown kind, a missing or ill-typed field, a frame that
// is not there — is refused with a WireError naming what was wrong.
#include <gtest/gtest.h>

#include <capnp/any.h>
#include <capnp/message.h>

#include <cstring>
#include <string>

#include "nodes/glm_codec.hpp"

namespace {

namespace wire = tessera::wire;
using tessera::GlmKind;
using tessera::GlmMessage;

tessera::glm::GlmSpec sample_spec() {
  tessera::glm::GlmSpec spec;
  spec.family = tessera::glm::Family::poisson;
  spec.solver = "admm";
  spec.regularizer = "elastic_net";
  spec.lambda = 0.25;
  spec.l1_ratio = 0.75;
  spec.fit_intercept = false;
  spec.max_iter = 77;
  spec.tol = 1e-9;
  spec.lbfgs_memory = 4;
  spec.rho = 2.5;
  spec.adaptive_rho = false;
  spec.over_relaxation = 1.5;
  spec.abstol = 1e-7;
  spec.reltol = 1e-5;
  spec.rows = 1000;
  spec.cols = 30;
  return spec;
}

void expect_same_spec(const tessera::glm::GlmSpec& a, const tessera::glm::GlmSpec& b) {
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.solver, b.solver);
  EXPECT_EQ(a.regularizer, b.regularizer);
  EXPECT_EQ(a.lambda, b.lambda);
  EXPECT_EQ(a.l1_ratio, b.l1_ratio);
  EXPECT_EQ(a.fit_intercept, b.fit_intercept);
  EXPECT_EQ(a.max_iter, b.max_iter);
  EXPECT_EQ(a.tol, b.tol);
  EXPECT_EQ(a.lbfgs_memory, b.lbfgs_memory);
  EXPECT_EQ(a.rho, b.rho);
  EXPECT_EQ(a.adaptive_rho, b.adaptive_rho);
  EXPECT_EQ(a.over_relaxation, b.over_relaxation);
  EXPECT_EQ(a.abstol, b.abstol);
  EXPECT_EQ(a.reltol, b.reltol);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
}

// Encodes and decodes through a flat message, with the frames copied as a receiver would get them.
struct RoundTrip {
  capnp::MallocMessageBuilder builder;
  wire::Attachments attachments;
  std::vector<std::vector<std::byte>> buffers;

  GlmMessage operator()(const GlmMessage& message) {
    wire::encode(message, builder.initRoot<wire::GlmMessage>(), attachments);
    return decode();
  }
  GlmMessage decode() {
    buffers.clear();
    for (auto frame : attachments.frames) buffers.emplace_back(frame.begin(), frame.end());
    std::vector<std::span<const std::byte>> frames;
    for (auto& b : buffers) frames.emplace_back(b.data(), b.size());
    return wire::decode(builder.getRoot<wire::GlmMessage>().asReader(), frames);
  }
};

template <class Body>
Body round_trip(Body body, std::uint64_t session = 42) {
  RoundTrip trip;
  const GlmMessage back = trip(GlmMessage{session, std::move(body)});
  EXPECT_EQ(back.session, session);
  EXPECT_TRUE(std::holds_alternative<Body>(back.body)) << tessera::glm_kind_name(back.kind());
  return std::get<Body>(back.body);
}

// Decoding `in` fails with a WireError whose message contains `expected`.
void expect_refused(RoundTrip& trip, const std::string& expected) {
  try {
    trip.decode();
    ADD_FAILURE() << "decoded; expected a WireError mentioning '" << expected << "'";
  } catch (const wire::WireError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(GlmCodec, AFitRequestRoundTrips) {
  tessera::GlmFitRequest fit{sample_spec(), {{3, 0, 0}, {3, 1, 250}, {9, 7, 500}}};
  const auto back = round_trip(fit);
  expect_same_spec(back.spec, fit.spec);
  ASSERT_EQ(back.partitions.size(), 3u);
  EXPECT_EQ(back.partitions[2].op, 9u);
  EXPECT_EQ(back.partitions[2].task, 7u);
  EXPECT_EQ(back.partitions[2].first_row, 500);
}

TEST(GlmCodec, AFittedAnswerRoundTripsAndSoDoesAnError) {
  tessera::GlmFitted fitted;
  fitted.beta = Eigen::VectorXd::LinSpaced(5, -1, 1);
  fitted.iterations = 12;
  fitted.converged = true;
  fitted.objective = 0.125;
  fitted.evaluations = 30;
  fitted.seconds = 1.5;
  fitted.rounds = 31;
  fitted.round_seconds = 1.25;
  fitted.worker_seconds = 0.75;
  const auto back = round_trip(fitted);
  EXPECT_EQ(back.error, "");
  EXPECT_EQ(back.beta, fitted.beta);
  EXPECT_EQ(back.iterations, 12);
  EXPECT_TRUE(back.converged);
  EXPECT_EQ(back.objective, 0.125);
  EXPECT_EQ(back.evaluations, 30);
  EXPECT_EQ(back.seconds, 1.5);
  EXPECT_EQ(back.rounds, 31);
  EXPECT_EQ(back.round_seconds, 1.25);
  EXPECT_EQ(back.worker_seconds, 0.75);

  tessera::GlmFitted failed;
  failed.error = "glm: worker 2 left the cluster";
  const auto failed_back = round_trip(failed);
  EXPECT_EQ(failed_back.error, failed.error);
  EXPECT_EQ(failed_back.beta.size(), 0);
}

TEST(GlmCodec, LoadAndLoadedRoundTrip) {
  tessera::GlmLoad load{sample_spec(), {{4, 2, 0, 0}, {4, 3, 1, 100}}};
  const auto back = round_trip(load);
  expect_same_spec(back.spec, load.spec);
  ASSERT_EQ(back.partitions.size(), 2u);
  EXPECT_EQ(back.partitions[1].op, 4u);
  EXPECT_EQ(back.partitions[1].slot, 3u);
  EXPECT_EQ(back.partitions[1].index, 1);
  EXPECT_EQ(back.partitions[1].first_row, 100);

  const auto loaded = round_trip(tessera::GlmLoaded{5, "glm: row 17 holds NaN"});
  EXPECT_EQ(loaded.worker, 5u);
  EXPECT_EQ(loaded.error, "glm: row 17 holds NaN");
}

TEST(GlmCodec, EvaluateAndPartialsRoundTripWithAndWithoutAHessian) {
  const auto evaluate = round_trip(tessera::GlmEvaluate{9, 2, Eigen::VectorXd::Constant(4, 0.5)});
  EXPECT_EQ(evaluate.round, 9);
  EXPECT_EQ(evaluate.order, 2);
  EXPECT_EQ(evaluate.beta, Eigen::VectorXd::Constant(4, 0.5));

  Eigen::MatrixXd hessian(2, 2);
  hessian << 1, 2, 3, 4;
  const auto with = round_trip(tessera::GlmPartials{9, "", 3.5, Eigen::VectorXd::Ones(2), hessian, 0.01});
  EXPECT_EQ(with.round, 9);
  EXPECT_EQ(with.loss, 3.5);
  EXPECT_EQ(with.gradient, Eigen::VectorXd::Ones(2));
  ASSERT_TRUE(with.hessian.has_value());
  EXPECT_EQ(*with.hessian, hessian);
  EXPECT_EQ(with.worker_seconds, 0.01);

  const auto without = round_trip(tessera::GlmPartials{10, "bad", 0, Eigen::VectorXd(), std::nullopt, 0});
  EXPECT_EQ(without.error, "bad");
  EXPECT_FALSE(without.hessian.has_value());
}

TEST(GlmCodec, SolveAndSolvedRoundTrip) {
  tessera::GlmSolve solve{3, 0.5, 0.25, {{0, Eigen::VectorXd::Ones(3), Eigen::VectorXd::Zero(3)}}};
  const auto back = round_trip(solve);
  EXPECT_EQ(back.round, 3);
  EXPECT_EQ(back.rho, 0.5);
  EXPECT_EQ(back.scale, 0.25);
  ASSERT_EQ(back.partitions.size(), 1u);
  EXPECT_EQ(back.partitions[0].target, Eigen::VectorXd::Ones(3));
  EXPECT_EQ(back.partitions[0].start, Eigen::VectorXd::Zero(3));

  const auto solved = round_trip(tessera::GlmSolved{3, "", {{1, Eigen::VectorXd::Constant(3, 2.0)}}, 0.5});
  EXPECT_EQ(solved.round, 3);
  ASSERT_EQ(solved.solutions.size(), 1u);
  EXPECT_EQ(solved.solutions[0].index, 1);
  EXPECT_EQ(solved.solutions[0].solution, Eigen::VectorXd::Constant(3, 2.0));
  EXPECT_EQ(solved.worker_seconds, 0.5);
}

TEST(GlmCodec, TheBodilessKindsRoundTrip) {
  round_trip(tessera::GlmRelease{});
  round_trip(tessera::GlmFinished{});
  EXPECT_EQ(round_trip(tessera::GlmLost{6}).worker, 6u);
}

TEST(GlmCodec, ALargeVectorTravelsAsAFrameNotInTheHeader) {
  const Eigen::VectorXd beta = Eigen::VectorXd::LinSpaced(1 << 14, 0, 1);  // 128 KiB
  RoundTrip trip;
  const auto back = trip(GlmMessage{1, tessera::GlmEvaluate{1, 1, beta}});
  EXPECT_EQ(trip.attachments.frames.size(), 1u);
  EXPECT_LT(trip.builder.sizeInWords() * sizeof(capnp::word), 4096u);
  EXPECT_EQ(std::get<tessera::GlmEvaluate>(back.body).beta, beta);

  trip.attachments.frames.clear();  // the frame does not arrive
  expect_refused(trip, "frame 0");
}

TEST(GlmCodec, AnUnknownKindIsRefused) {
  RoundTrip trip;
  trip(GlmMessage{1, tessera::GlmRelease{}});
  // The union's discriminant follows the session in the data section (checked before it is overwritten).
  auto data = capnp::AnyStruct::Builder(trip.builder.getRoot<wire::GlmMessage>()).getDataSection();
  ASSERT_GE(data.size(), 10u);
  std::uint16_t discriminant = 0;
  std::memcpy(&discriminant, data.begin() + 8, sizeof discriminant);
  ASSERT_EQ(discriminant, static_cast<std::uint16_t>(wire::GlmMessage::RELEASE));
  discriminant = 42;
  std::memcpy(data.begin() + 8, &discriminant, sizeof discriminant);
  expect_refused(trip, "unknown kind 42");
}

TEST(GlmCodec, MissingAndIllTypedFieldsAreRefusedByName) {
  {
    RoundTrip trip;
    trip.builder.initRoot<wire::GlmMessage>().initEvaluate().setRound(1);  // no beta
    expect_refused(trip, "evaluate.beta is missing");
  }
  {
    RoundTrip trip;
    auto evaluate = trip.builder.initRoot<wire::GlmMessage>().initEvaluate();
    wire::encode(tessera::Value("not a vector"), evaluate.initBeta(), trip.attachments);
    expect_refused(trip, "evaluate.beta must be a vector");
  }
  {
    RoundTrip trip;
    auto evaluate = trip.builder.initRoot<wire::GlmMessage>().initEvaluate();
    wire::encode(tessera::Value(Eigen::VectorXd::Ones(2).eval()), evaluate.initBeta(), trip.attachments);
    evaluate.setOrder(7);
    expect_refused(trip, "evaluate.order must be 0, 1 or 2, got 7");
  }
  {
    RoundTrip trip;
    trip.builder.initRoot<wire::GlmMessage>().initFit();  // no spec
    expect_refused(trip, "fit.spec is missing");
  }
  {
    RoundTrip trip;
    trip.builder.initRoot<wire::GlmMessage>().initLoad().initSpec().setFamily(9);
    expect_refused(trip, "load.spec names unknown family 9");
  }
  {
    RoundTrip trip;
    auto partials = trip.builder.initRoot<wire::GlmMessage>().initPartials();
    wire::encode(tessera::Value(Eigen::VectorXd::Ones(2).eval()), partials.initGradient(), trip.attachments);
    wire::encode(tessera::Value(Eigen::VectorXd::Ones(2).eval()), partials.initHessian(), trip.attachments);
    expect_refused(trip, "partials.hessian must be a matrix");
  }
  {
    RoundTrip trip;
    auto solve = trip.builder.initRoot<wire::GlmMessage>().initSolve();
    auto target = solve.initPartitions(1)[0];
    wire::encode(tessera::Value(Eigen::VectorXd::Ones(2).eval()), target.initTarget(), trip.attachments);
    expect_refused(trip, "solve.start is missing");
  }
}

// The wire carries any settings; the scheduler's validation is what refuses a bad one, naming it.
TEST(GlmCodec, ASpecWithAnUnknownSolverDecodesAndValidationRefusesIt) {
  tessera::GlmFitRequest fit{sample_spec(), {{1, 0, 0}}};
  fit.spec.solver = "sgd";
  const auto back = round_trip(fit);
  EXPECT_EQ(back.spec.solver, "sgd");
  try {
    tessera::glm::validate(back.spec);
    ADD_FAILURE() << "validate accepted solver sgd";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown solver 'sgd'"), std::string::npos) << e.what();
  }
}

}  // namespace
