#include "nodes/glm_codec.hpp"

#include <string>

namespace tessera::wire {
namespace {

unsigned count(std::size_t n) {
  return static_cast<unsigned>(n);
}

std::string text(capnp::Text::Reader in) {
  return std::string(in.begin(), in.end());
}

[[noreturn]] void refuse(const char* field, const std::string& why) {
  throw WireError(std::string("GLM message: ") + field + " " + why);
}

void encode_spec(const glm::GlmSpec& spec, GlmSpec::Builder out) {
  out.setFamily(static_cast<std::uint8_t>(spec.family));
  out.setSolver(spec.solver);
  out.setRegularizer(spec.regularizer);
  out.setLambda(spec.lambda);
  out.setL1Ratio(spec.l1_ratio);
  out.setFitIntercept(spec.fit_intercept);
  out.setMaxIter(spec.max_iter);
  out.setTol(spec.tol);
  out.setLbfgsMemory(spec.lbfgs_memory);
  out.setRho(spec.rho);
  out.setAdaptiveRho(spec.adaptive_rho);
  out.setOverRelaxation(spec.over_relaxation);
  out.setAbstol(spec.abstol);
  out.setReltol(spec.reltol);
  out.setRows(spec.rows);
  out.setCols(spec.cols);
}

// The settings are the scheduler's to validate (it answers the client with what is wrong); here only
// what cannot be represented at all is refused.
glm::GlmSpec decode_spec(bool present, GlmSpec::Reader in, const char* field) {
  if (!present) refuse(field, "is missing");
  glm::GlmSpec spec;
  if (in.getFamily() > static_cast<std::uint8_t>(backends::glm::Family::poisson))
    refuse(field, "names unknown family " + std::to_string(in.getFamily()));
  spec.family = static_cast<backends::glm::Family>(in.getFamily());
  spec.solver = text(in.getSolver());
  spec.regularizer = text(in.getRegularizer());
  spec.lambda = in.getLambda();
  spec.l1_ratio = in.getL1Ratio();
  spec.fit_intercept = in.getFitIntercept();
  spec.max_iter = in.getMaxIter();
  spec.tol = in.getTol();
  spec.lbfgs_memory = in.getLbfgsMemory();
  spec.rho = in.getRho();
  spec.adaptive_rho = in.getAdaptiveRho();
  spec.over_relaxation = in.getOverRelaxation();
  spec.abstol = in.getAbstol();
  spec.reltol = in.getReltol();
  spec.rows = in.getRows();
  spec.cols = in.getCols();
  return spec;
}

void encode_vector(const Eigen::VectorXd& vector, Value::Builder out, Attachments& attachments) {
  encode(tessera::Value(vector), out, attachments);
}

Eigen::VectorXd decode_vector(bool present, Value::Reader in, Frames frames, const char* field) {
  if (!present) refuse(field, "is missing (a vector)");
  if (in.which() != Value::VECTOR) refuse(field, "must be a vector value");
  return decode(in, frames).as_vector();
}

Eigen::MatrixXd decode_matrix(Value::Reader in, Frames frames, const char* field) {
  if (in.which() != Value::MATRIX) refuse(field, "must be a matrix value");
  return decode(in, frames).as_matrix();
}

// One alternative of the body, by overload.
struct BodyEncoder {
  GlmMessage::Builder out;
  Attachments& attachments;

  void operator()(const tessera::GlmFitRequest& fit) {
    auto b = out.initFit();
    encode_spec(fit.spec, b.initSpec());
    auto list = b.initPartitions(count(fit.partitions.size()));
    for (std::size_t i = 0; i < fit.partitions.size(); ++i) {
      const auto& p = fit.partitions[i];
      auto e = list[count(i)];
      e.setOp(p.op);
      e.setTask(p.task);
      e.setFirstRow(p.first_row);
    }
  }
  void operator()(const tessera::GlmFitted& fitted) {
    auto b = out.initFitted();
    b.setError(fitted.error);
    encode_vector(fitted.beta, b.initBeta(), attachments);
    b.setIterations(fitted.iterations);
    b.setConverged(fitted.converged);
    b.setObjective(fitted.objective);
    b.setEvaluations(fitted.evaluations);
    b.setSeconds(fitted.seconds);
    b.setRounds(fitted.rounds);
    b.setRoundSeconds(fitted.round_seconds);
    b.setWorkerSeconds(fitted.worker_seconds);
  }
  void operator()(const tessera::GlmLoad& load) {
    auto b = out.initLoad();
    encode_spec(load.spec, b.initSpec());
    auto list = b.initPartitions(count(load.partitions.size()));
    for (std::size_t i = 0; i < load.partitions.size(); ++i) {
      const auto& p = load.partitions[i];
      auto e = list[count(i)];
      e.setOp(p.op);
      e.setSlot(p.slot);
      e.setIndex(p.index);
      e.setFirstRow(p.first_row);
    }
  }
  void operator()(const tessera::GlmLoaded& loaded) {
    auto b = out.initLoaded();
    b.setWorker(loaded.worker);
    b.setError(loaded.error);
  }
  void operator()(const tessera::GlmEvaluate& evaluate) {
    auto b = out.initEvaluate();
    b.setRound(evaluate.round);
    b.setOrder(static_cast<std::uint8_t>(evaluate.order));
    encode_vector(evaluate.beta, b.initBeta(), attachments);
  }
  void operator()(const tessera::GlmPartials& partials) {
    auto b = out.initPartials();
    b.setRound(partials.round);
    b.setError(partials.error);
    b.setLoss(partials.loss);
    encode_vector(partials.gradient, b.initGradient(), attachments);
    if (partials.hessian) encode(tessera::Value(*partials.hessian), b.initHessian(), attachments);
    b.setWorkerSeconds(partials.worker_seconds);
  }
  void operator()(const tessera::GlmSolve& solve) {
    auto b = out.initSolve();
    b.setRound(solve.round);
    b.setRho(solve.rho);
    b.setScale(solve.scale);
    auto list = b.initPartitions(count(solve.partitions.size()));
    for (std::size_t i = 0; i < solve.partitions.size(); ++i) {
      const auto& p = solve.partitions[i];
      auto e = list[count(i)];
      e.setIndex(p.index);
      encode_vector(p.target, e.initTarget(), attachments);
      encode_vector(p.start, e.initStart(), attachments);
    }
  }
  void operator()(const tessera::GlmSolved& solved) {
    auto b = out.initSolved();
    b.setRound(solved.round);
    b.setError(solved.error);
    auto list = b.initSolutions(count(solved.solutions.size()));
    for (std::size_t i = 0; i < solved.solutions.size(); ++i) {
      auto e = list[count(i)];
      e.setIndex(solved.solutions[i].index);
      encode_vector(solved.solutions[i].solution, e.initSolution(), attachments);
    }
    b.setWorkerSeconds(solved.worker_seconds);
  }
  void operator()(const tessera::GlmRelease&) { out.initRelease(); }
  void operator()(const tessera::GlmFinished&) { out.initFinished(); }
  void operator()(const tessera::GlmLost& lost) { out.initLost().setWorker(lost.worker); }
};

tessera::GlmBody decode_body(GlmMessage::Reader in, Frames frames) {
  switch (in.which()) {
    case GlmMessage::FIT: {
      auto b = in.getFit();
      tessera::GlmFitRequest fit;
      fit.spec = decode_spec(b.hasSpec(), b.getSpec(), "fit.spec");
      for (auto p : b.getPartitions())
        fit.partitions.push_back(tessera::GlmPartitionTask{p.getOp(), p.getTask(), p.getFirstRow()});
      return fit;
    }
    case GlmMessage::FITTED: {
      auto b = in.getFitted();
      tessera::GlmFitted fitted;
      fitted.error = text(b.getError());
      fitted.beta = decode_vector(b.hasBeta(), b.getBeta(), frames, "fitted.beta");
      fitted.iterations = b.getIterations();
      fitted.converged = b.getConverged();
      fitted.objective = b.getObjective();
      fitted.evaluations = b.getEvaluations();
      fitted.seconds = b.getSeconds();
      fitted.rounds = b.getRounds();
      fitted.round_seconds = b.getRoundSeconds();
      fitted.worker_seconds = b.getWorkerSeconds();
      return fitted;
    }
    case GlmMessage::LOAD: {
      auto b = in.getLoad();
      tessera::GlmLoad load;
      load.spec = decode_spec(b.hasSpec(), b.getSpec(), "load.spec");
      for (auto p : b.getPartitions())
        load.partitions.push_back(
            tessera::GlmHeldPartition{p.getOp(), p.getSlot(), p.getIndex(), p.getFirstRow()});
      return load;
    }
    case GlmMessage::LOADED: {
      auto b = in.getLoaded();
      return tessera::GlmLoaded{b.getWorker(), text(b.getError())};
    }
    case GlmMessage::EVALUATE: {
      auto b = in.getEvaluate();
      if (b.getOrder() > 2)
        refuse("evaluate.order", "must be 0, 1 or 2, got " + std::to_string(b.getOrder()));
      return tessera::GlmEvaluate{b.getRound(), b.getOrder(),
                                  decode_vector(b.hasBeta(), b.getBeta(), frames, "evaluate.beta")};
    }
    case GlmMessage::PARTIALS: {
      auto b = in.getPartials();
      tessera::GlmPartials partials;
      partials.round = b.getRound();
      partials.error = text(b.getError());
      partials.loss = b.getLoss();
      partials.gradient = decode_vector(b.hasGradient(), b.getGradient(), frames, "partials.gradient");
      if (b.hasHessian()) partials.hessian = decode_matrix(b.getHessian(), frames, "partials.hessian");
      partials.worker_seconds = b.getWorkerSeconds();
      return partials;
    }
    case GlmMessage::SOLVE: {
      auto b = in.getSolve();
      tessera::GlmSolve solve{b.getRound(), b.getRho(), b.getScale(), {}};
      for (auto p : b.getPartitions())
        solve.partitions.push_back(tessera::GlmLocalTarget{
            p.getIndex(), decode_vector(p.hasTarget(), p.getTarget(), frames, "solve.target"),
            decode_vector(p.hasStart(), p.getStart(), frames, "solve.start")});
      return solve;
    }
    case GlmMessage::SOLVED: {
      auto b = in.getSolved();
      tessera::GlmSolved solved;
      solved.round = b.getRound();
      solved.error = text(b.getError());
      for (auto s : b.getSolutions())
        solved.solutions.push_back(tessera::GlmLocalSolution{
            s.getIndex(), decode_vector(s.hasSolution(), s.getSolution(), frames, "solved.solution")});
      solved.worker_seconds = b.getWorkerSeconds();
      return solved;
    }
    case GlmMessage::RELEASE:
      return tessera::GlmRelease{};
    case GlmMessage::FINISHED:
      return tessera::GlmFinished{};
    case GlmMessage::LOST:
      return tessera::GlmLost{in.getLost().getWorker()};
  }
  throw WireError("GLM message: unknown kind " + std::to_string(static_cast<unsigned>(in.which())) +
                  " (a newer protocol version?)");
}

}  // namespace

void encode(const tessera::GlmMessage& message, GlmMessage::Builder out, Attachments& attachments) {
  out.setSession(message.session);
  std::visit(BodyEncoder{out, attachments}, message.body);
}

tessera::GlmMessage decode(GlmMessage::Reader in, const Frames& frames) {
  try {
    return tessera::GlmMessage{in.getSession(), decode_body(in, frames)};
  } catch (const kj::Exception& e) {
    throw WireError(std::string("malformed GLM message: ") + e.getDescription().cStr());
  }
}

}  // namespace tessera::wire
