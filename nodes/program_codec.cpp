#include "nodes/program_codec.hpp"

#include "graph/printable.hpp"
#include "messages/wire_codec.hpp"

namespace tessera::wire {
namespace {

// Far past any real declaration, and what keeps a hostile one from costing much.
constexpr std::size_t kMaxItems = 4096;
constexpr std::size_t kMaxText = 64 * 1024;
constexpr std::size_t kMaxTemplate = std::size_t{1} << 20;

template <class List>
void set_texts(List out, const std::vector<std::string>& texts) {
  for (unsigned i = 0; i < texts.size(); ++i) out.set(i, texts[i]);
}

template <class List>
void set_pairs(List out, const std::map<std::string, std::string>& pairs) {
  unsigned i = 0;
  for (const auto& [key, value] : pairs) {
    out[i].setKey(key);
    out[i].setValue(value);
    ++i;
  }
}

struct Decoder {
  std::string_view simulation;
  [[noreturn]] void fail(const std::string& why) const {
    throw WireError("simulation " + in_quotes(simulation) + ": program declaration: " + why);
  }
  std::string text(capnp::Text::Reader in, const char* field, std::size_t limit = kMaxText) const {
    if (in.size() > limit)
      fail(std::string(field) + " is " + std::to_string(in.size()) + " bytes, over " + std::to_string(limit));
    return std::string(in.cStr(), in.size());
  }
  std::vector<std::string> texts(capnp::List<capnp::Text>::Reader in, const char* field) const {
    if (in.size() > kMaxItems) fail(std::string(field) + " has " + std::to_string(in.size()) + " items");
    std::vector<std::string> out;
    for (auto item : in) out.push_back(text(item, field));
    return out;
  }
  std::map<std::string, std::string> pairs(capnp::List<::tessera::wire::TextPair>::Reader in,
                                           const char* field, std::size_t limit) const {
    if (in.size() > kMaxItems) fail(std::string(field) + " has " + std::to_string(in.size()) + " items");
    std::map<std::string, std::string> out;
    for (auto pair : in) out[text(pair.getKey(), field)] = text(pair.getValue(), field, limit);
    return out;
  }
};

}  // namespace

void encode(const ::tessera::ProgramSpec& spec, ::tessera::wire::ProgramSpec::Builder out) {
  set_texts(out.initCommand(static_cast<unsigned>(spec.command.size())), spec.command);
  set_texts(out.initParameters(static_cast<unsigned>(spec.parameters.size())), spec.parameters);
  set_pairs(out.initFiles(static_cast<unsigned>(spec.files.size())), spec.files);
  out.setResultFormat(static_cast<std::uint8_t>(spec.result.format));
  out.setResultFile(spec.result.file);
  out.setResultRegex(spec.result.regex);
  set_texts(out.initOutputs(static_cast<unsigned>(spec.result.outputs.size())), spec.result.outputs);
  out.setRanks(spec.ranks);
  out.setThreads(spec.threads);
  out.setGpus(spec.gpus);
  out.setLauncher(spec.launcher);
  set_texts(out.initLauncherArgv(static_cast<unsigned>(spec.launcher_argv.size())), spec.launcher_argv);
  set_pairs(out.initEnv(static_cast<unsigned>(spec.env.size())), spec.env);
  out.setKeep(static_cast<std::uint8_t>(spec.keep));
  out.setTimeoutSeconds(spec.timeout_seconds);
  out.setGraceSeconds(spec.grace_seconds);
  out.setWorkdirRoot(spec.workdir_root);
}

std::shared_ptr<const ::tessera::ProgramSpec> decode(::tessera::wire::ProgramSpec::Reader in,
                                                     std::string_view simulation) {
  const Decoder d{simulation};
  auto spec = std::make_shared<::tessera::ProgramSpec>();
  spec->command = d.texts(in.getCommand(), "command");
  spec->parameters = d.texts(in.getParameters(), "parameters");
  spec->files = d.pairs(in.getFiles(), "files", kMaxTemplate);
  if (in.getResultFormat() > static_cast<std::uint8_t>(ProgramResultFormat::numbers))
    d.fail("result format " + std::to_string(in.getResultFormat()) + " is unknown");
  spec->result.format = static_cast<ProgramResultFormat>(in.getResultFormat());
  spec->result.file = d.text(in.getResultFile(), "result.file");
  spec->result.regex = d.text(in.getResultRegex(), "result.regex");
  spec->result.outputs = d.texts(in.getOutputs(), "result.outputs");
  spec->ranks = in.getRanks();
  spec->threads = in.getThreads();
  spec->gpus = in.getGpus();
  spec->launcher = d.text(in.getLauncher(), "launcher");
  spec->launcher_argv = d.texts(in.getLauncherArgv(), "launcher");
  spec->env = d.pairs(in.getEnv(), "env", kMaxText);
  if (in.getKeep() > static_cast<std::uint8_t>(KeepDirectories::never))
    d.fail("keep " + std::to_string(in.getKeep()) + " is unknown");
  spec->keep = static_cast<KeepDirectories>(in.getKeep());
  spec->timeout_seconds = in.getTimeoutSeconds();
  spec->grace_seconds = in.getGraceSeconds();
  spec->workdir_root = d.text(in.getWorkdirRoot(), "workdir_root");
  if (const auto problems = check_program_spec(*spec); !problems.empty()) d.fail(problems.front());
  return spec;
}

}  // namespace tessera::wire
