// tessera._tessera: LocalCluster, Client (submit, map, cancel by registered name), load_plugin and the
// registry's names. python/tessera/_cluster.py wraps these with Dask's keyword arguments and checks.
#include <pybind11/stl.h>

#include <chrono>

#include "actors/python_modules.hpp"
#include "bindings.hpp"
#include "dashboard/status_json.hpp"
#include "graph/printable.hpp"
#include "graph/registry.hpp"
#include "graph/simulation.hpp"
#include "nodes/transport.hpp"
#include "tessera/plugins.hpp"
#include "tessera/programs.hpp"
#include "values.hpp"
#include "waiting.hpp"

namespace tessera::python {

namespace {
// A question to the cluster, asked with the GIL released (it may wait on the network).
template <class Ask>
auto without_gil(Ask&& ask) {
  py::gil_scoped_release released;
  return ask();
}

// A task argument: a future of this client becomes a reference to its task (and is kept alive by the
// new future), anything else a literal Value.
Arg to_arg(py::handle object, const ClientState& owner, py::list& inputs, const std::string& where) {
  if (py::isinstance<PyFuture>(object)) {
    auto& future = object.cast<PyFuture&>();
    if (future.owner.get() != &owner)
      throw SubmissionError(where + ": a future of another client cannot be an argument here");
    inputs.append(object);
    return Arg(future.future.task());
  }
  return Arg(to_value(object, where));
}

PyFuture submit(const ClientPtr& owner, const std::string& name, const py::args& args) {
  std::vector<Arg> converted;
  py::list inputs;
  for (std::size_t i = 0; i < args.size(); ++i)
    converted.push_back(to_arg(args[i], *owner, inputs,
                               "argument " + std::to_string(i) + " of submit(" + in_quotes(name) + ")"));
  Future<Value> future = [&] {
    py::gil_scoped_release released;
    return owner->client.submit_by_name(name, std::move(converted));
  }();
  return PyFuture{owner, std::move(future), name, std::move(inputs)};
}

std::vector<PyFuture> map(const ClientPtr& owner, const std::string& name, const py::args& iterables,
                          const py::kwargs& options) {
  if (iterables.size() == 0) throw SubmissionError("map(" + in_quotes(name) + "): no input to map over");
  std::vector<std::vector<Arg>> inputs;
  py::list kept;
  // leading=[...]: literal arguments every task gets first, sent once (a pickled function).
  std::vector<Value> leading;
  if (options.contains("leading"))
    for (auto item : py::reinterpret_borrow<py::sequence>(options["leading"]))
      leading.push_back(to_value(item, "a leading argument of map(" + in_quotes(name) + ")"));
  for (std::size_t k = 0; k < iterables.size(); ++k) {
    const std::string where = "input " + std::to_string(k) + " of map(" + in_quotes(name) + ")";
    py::handle iterable = iterables[k];
    if (py::isinstance<py::str>(iterable) || py::isinstance<py::bytes>(iterable))
      throw SubmissionError(where + ": a string is not a sequence of task arguments");
    std::vector<Arg> column;
    if (py::hasattr(iterable, "__len__")) column.reserve(py::len(iterable));
    std::size_t i = 0;
    for (auto item : py::iter(iterable))
      column.push_back(to_arg(item, *owner, kept, where + "[" + std::to_string(i++) + "]"));
    inputs.push_back(std::move(column));
  }
  std::vector<Future<Value>> futures = [&] {
    py::gil_scoped_release released;
    return owner->client.map_by_name(name, std::move(inputs), std::move(leading));
  }();
  std::vector<PyFuture> out;
  out.reserve(futures.size());
  for (auto& f : futures) out.push_back(PyFuture{owner, std::move(f), name, kept});
  return out;
}

}  // namespace

void bind_cluster(py::module_& m) {
  m.def(
      "load_plugin", [](const std::string& path) { load_plugin(path); }, py::arg("path"),
      "Loads a plugin (a shared library built with tessera_add_plugin): its task functions, simulations "
      "and generators can then be submitted by name from this process.");
  m.def(
      "_register_python",
      [](const std::vector<std::string>& modules, const std::string& executable,
         const std::string& package_path) {
        auto environment = python_environment(modules);
        if (!executable.empty()) environment.executable = executable;
        if (!package_path.empty()) environment.package_path = package_path;
        PythonRegistration registered;
        {
          py::gil_scoped_release unlocked;  // the import runs in another interpreter, for seconds maybe
          try {
            registered =
                register_python_modules(std::make_shared<const PythonEnvironment>(std::move(environment)));
          } catch (const PythonModuleError& e) {
            throw PluginError(e.what());
          }
        }
        py::dict out;
        out["tasks"] = registered.tasks;
        out["simulations"] = registered.simulations;
        out["generators"] = registered.generators;
        return out;
      },
      py::arg("modules"), py::arg("executable") = "", py::arg("package_path") = "",
      "Imports Python modules in a worker interpreter and registers their @tessera.task functions and "
      "@tessera.simulation classes by name in this process (LocalCluster(python=) calls it).");
  m.def(
      "curve_keypair",
      [] {
        const auto keys = transport::generate_curve_keys();
        return py::make_tuple(keys.public_key, keys.secret_key);
      },
      "A new CURVE key pair (public, secret), Z85 text, as `tessera keygen` writes them.");
  m.def(
      "functions", [] { return Registry::global().names(); },
      "The names of the task functions registered in this process (built in and from loaded plugins).");
  m.def(
      "simulations", [] { return SimulationRegistry::global().names(); },
      "The names of the simulations registered in this process.");
  m.def(
      "register_program",
      [](std::string name, std::vector<std::string> command, std::vector<std::string> parameters,
         std::map<std::string, std::string> files, std::string result_format, std::string result_file,
         std::string result_regex, std::vector<std::string> outputs, std::uint32_t ranks,
         std::string launcher, std::uint32_t threads, std::uint32_t gpus,
         std::map<std::string, std::string> env, std::string keep, double timeout, double grace,
         std::string workdir_root) {
        ProgramSpec spec;
        spec.command = std::move(command);
        spec.parameters = std::move(parameters);
        spec.files = std::move(files);
        static const std::map<std::string, ProgramResultFormat> formats{
            {"last_number", ProgramResultFormat::last_number},
            {"regex", ProgramResultFormat::regex},
            {"json", ProgramResultFormat::json},
            {"numbers", ProgramResultFormat::numbers}};
        if (result_format.empty()) result_format = result_regex.empty() ? "last_number" : "regex";
        const auto format = formats.find(result_format);
        if (format == formats.end())
          throw std::invalid_argument("register_program: result_format '" + result_format +
                                      "' is not one of last_number, regex, json, numbers");
        spec.result = {format->second, std::move(result_file), std::move(result_regex), std::move(outputs)};
        spec.ranks = ranks;
        spec.launcher = std::move(launcher);
        spec.threads = threads;
        spec.gpus = gpus;
        spec.env = std::move(env);
        static const std::map<std::string, KeepDirectories> keeps{{"always", KeepDirectories::always},
                                                                  {"failed", KeepDirectories::failed},
                                                                  {"never", KeepDirectories::never}};
        const auto kept = keeps.find(keep);
        if (kept == keeps.end())
          throw std::invalid_argument("register_program: keep '" + keep +
                                      "' is not one of always, failed, never");
        spec.keep = kept->second;
        spec.timeout_seconds = timeout;
        spec.grace_seconds = grace;
        spec.workdir_root = std::move(workdir_root);
        register_program(std::move(name), std::move(spec));
      },
      py::arg("name"), py::kw_only(), py::arg("command"), py::arg("parameters") = std::vector<std::string>{},
      py::arg("files") = std::map<std::string, std::string>{}, py::arg("result_format") = "",
      py::arg("result_file") = "", py::arg("result_regex") = "",
      py::arg("outputs") = std::vector<std::string>{}, py::arg("ranks") = 1, py::arg("launcher") = "",
      py::arg("threads") = 1, py::arg("gpus") = 0, py::arg("env") = std::map<std::string, std::string>{},
      py::arg("keep") = "failed", py::arg("timeout") = 0.0, py::arg("grace") = 5.0,
      py::arg("workdir_root") = "",
      "Declares a program as a simulation of this process (an embedded LocalCluster runs it), as a node's "
      "[simulations.NAME] table does: `files` maps a file name to its template's text. Streams then name "
      "it.");

  py::class_<LocalCluster, std::shared_ptr<LocalCluster>>(m, "_LocalCluster")
      .def(py::init([](std::uint32_t workers, std::uint32_t threads_per_worker, std::uint64_t memory_limit,
                       double memory_target_fraction, double memory_pause_fraction, std::string data_dir,
                       std::string dashboard, std::uint32_t actor_threads) {
             ClusterOptions options;
             options.workers = workers;
             options.threads_per_worker = threads_per_worker;
             options.memory_limit = memory_limit;
             options.memory_target_fraction = memory_target_fraction;
             options.memory_pause_fraction = memory_pause_fraction;
             options.data_dir = std::move(data_dir);
             options.dashboard = std::move(dashboard);
             options.actor_threads = actor_threads;
             py::gil_scoped_release released;
             return std::make_shared<LocalCluster>(options);
           }),
           py::arg("workers"), py::arg("threads_per_worker"), py::arg("memory_limit"),
           py::arg("memory_target_fraction"), py::arg("memory_pause_fraction"), py::arg("data_dir"),
           py::arg("dashboard"), py::arg("actor_threads"))
      .def("scale", &LocalCluster::scale, py::arg("workers"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("workers", &LocalCluster::workers)
      .def_property_readonly("threads_per_worker", &LocalCluster::threads_per_worker)
      .def_property_readonly("dashboard_link", &LocalCluster::dashboard_link)
      .def(
          "wait_for_workers",
          [](LocalCluster& cluster, std::uint32_t workers, double timeout) {
            const auto deadline = deadline_after(timeout, "wait_for_workers");
            return wait_interruptibly(
                [&](Clock::time_point slice_end) {
                  return cluster.wait_for_workers(
                      workers,
                      std::chrono::duration_cast<std::chrono::milliseconds>(slice_end - Clock::now()));
                },
                deadline);
          },
          py::arg("workers"), py::arg("timeout"))
      // As `tessera status --json`'s scheduler part (one writer: dashboard/status_json.hpp); an embedded
      // cluster's clients are in this process, not counted.
      .def("status_json", [](const LocalCluster& cluster) {
        const auto status = without_gil([&] { return cluster.status(); });
        auto out = dashboard::scheduler_json(status, 0);
        out.erase("clients");
        return out.dump(-1, ' ', false, dashboard::Json::error_handler_t::replace);
      });

  py::class_<ClientState, ClientPtr>(m, "_Client")
      .def(py::init([](std::shared_ptr<LocalCluster> cluster) {
             if (!cluster) throw std::invalid_argument("Client: the cluster is closed");
             return std::make_shared<ClientState>(ClientState{cluster, Client(*cluster)});
           }),
           py::arg("cluster"))
      .def(py::init([](const std::string& address, const std::string& name, const std::string& public_key,
                       const std::string& secret_key, const std::string& scheduler_public_key,
                       double heartbeat_timeout, double reconnect_timeout) {
             ConnectOptions options;
             options.name = name;
             options.public_key = public_key;
             options.secret_key = secret_key;
             options.scheduler_public_key = scheduler_public_key;
             auto millis = [](double seconds) {
               return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
             };
             options.heartbeat_timeout = millis(heartbeat_timeout);
             options.reconnect_timeout = millis(reconnect_timeout);
             py::gil_scoped_release released;
             return std::make_shared<ClientState>(ClientState{nullptr, Client(address, options)});
           }),
           py::arg("address"), py::arg("name"), py::arg("public_key"), py::arg("secret_key"),
           py::arg("scheduler_public_key"), py::arg("heartbeat_timeout"), py::arg("reconnect_timeout"))
      .def("submit", &submit, py::arg("name"))
      .def("map", &map, py::arg("name"))
      // As `tessera status --json` and `tessera workers --json` (one writer: dashboard/status_json.hpp).
      .def("status_json",
           [](const ClientPtr& owner) {
             const auto status = without_gil([&] { return owner->client.status(); });
             return dashboard::cluster_status_json(status).dump(-1, ' ', false,
                                                                dashboard::Json::error_handler_t::replace);
           })
      .def("workers_json",
           [](const ClientPtr& owner) {
             const auto workers = without_gil([&] { return owner->client.workers(); });
             return dashboard::workers_json(workers).dump(-1, ' ', false,
                                                          dashboard::Json::error_handler_t::replace);
           })
      .def("functions",
           [](const ClientPtr& owner) {
             const auto listed = without_gil([&] { return owner->client.functions(); });
             py::list out;
             for (const auto& f : listed) {
               py::dict entry;
               entry["name"] = f.name;
               entry["argument_types"] = f.argument_types;
               entry["result_type"] = f.result_type;
               entry["identity"] = f.identity;
               out.append(entry);
             }
             return out;
           })
      .def("simulations",
           [](const ClientPtr& owner) {
             const auto listed = without_gil([&] { return owner->client.simulations(); });
             py::list out;
             for (const auto& s : listed) {
               py::dict entry;
               entry["name"] = s.name;
               entry["program"] = s.program;
               entry["parameters"] = s.parameters;
               entry["outputs"] = s.outputs;
               entry["arity"] = s.arity ? py::object(py::int_(*s.arity)) : py::object(py::none());
               entry["parameter_type"] = s.parameter_type;
               entry["result_type"] = s.result_type;
               entry["cores"] = s.threads;
               entry["gpus"] = s.gpus;
               entry["command"] = s.command;
               entry["identity"] = s.identity;
               out.append(entry);
             }
             return out;
           })
      .def("cancel", [](const ClientPtr& owner, const std::vector<PyFuture*>& futures) {
        std::vector<Future<Value>> handles;
        for (const auto* f : futures) handles.push_back(f->future);
        py::gil_scoped_release released;
        owner->client.cancel(handles);
      });
}

}  // namespace tessera::python
