// deploy/kubernetes validated offline (no cluster here): every manifest parses as YAML with the fields
// Kubernetes requires, the objects refer to each other consistently (selectors, services, volumes, the
// ConfigMap's and Secret's keys), make-keys.sh writes a Secret of usable CURVE keys, and the TOML configs
// the ConfigMap carries pass `tessera-node --check-config` with those keys.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "support/node_process.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kManifests = fs::path(TESSERA_SOURCE_DIR) / "deploy" / "kubernetes";

std::string base64_decode(const std::string& text) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const auto at = alphabet.find(c);
    if (at == std::string::npos) throw std::invalid_argument("not base64: " + text.substr(0, 40));
    buffer = (buffer << 6) | static_cast<unsigned>(at);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

class Manifests : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-kubernetes-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    int code = 0;
    const auto out = tessera::testing::run_command(
        (kManifests / "make-keys.sh").string() + " " + dir_.string() + " " + TESSERA_CLI_BINARY, code);
    ASSERT_EQ(code, 0) << out;
    for (const auto& file : {kManifests / "configmap.yaml", kManifests / "scheduler.yaml",
                             kManifests / "workers.yaml", dir_ / "secret.yaml"})
      for (const auto& document : YAML::LoadAllFromFile(file.string())) {
        ASSERT_TRUE(document.IsMap()) << file;
        for (const char* field : {"apiVersion", "kind", "metadata"})
          ASSERT_TRUE(document[field]) << file << " has a document without " << field;
        ASSERT_TRUE(document["metadata"]["name"]) << file << ": metadata.name";
        objects_[document["kind"].as<std::string>() + "/" + document["metadata"]["name"].as<std::string>()] =
            document;
      }
  }
  void TearDown() override { fs::remove_all(dir_); }

  YAML::Node object(const std::string& key) const {
    const auto it = objects_.find(key);
    if (it == objects_.end()) throw std::out_of_range("no " + key + " in the manifests");
    return it->second;
  }

  // A pod template's containers mount only volumes it declares, which name the ConfigMap and the Secret.
  void check_pod(const YAML::Node& workload, const std::string& config_key) const {
    const auto spec = workload["spec"];
    for (const auto& [label, value] :
         spec["selector"]["matchLabels"].as<std::map<std::string, std::string>>())
      EXPECT_EQ(spec["template"]["metadata"]["labels"][label].as<std::string>(), value) << label;
    const auto pod = spec["template"]["spec"];
    std::set<std::string> volumes;
    for (const auto& volume : pod["volumes"]) {
      volumes.insert(volume["name"].as<std::string>());
      if (volume["configMap"]) {
        const auto map = object("ConfigMap/" + volume["configMap"]["name"].as<std::string>());
        EXPECT_TRUE(map["data"][config_key]) << "the ConfigMap has no " << config_key;
      }
      if (volume["secret"]) {
        EXPECT_NO_THROW(object("Secret/" + volume["secret"]["secretName"].as<std::string>()));
      }
    }
    if (spec["volumeClaimTemplates"])
      for (const auto& claim : spec["volumeClaimTemplates"]) {
        volumes.insert(claim["metadata"]["name"].as<std::string>());
        EXPECT_TRUE(claim["spec"]["resources"]["requests"]["storage"]);
      }
    ASSERT_EQ(pod["containers"].size(), 1u);
    const auto container = pod["containers"][0];
    EXPECT_TRUE(container["image"]);
    const auto command = container["command"].as<std::vector<std::string>>();
    ASSERT_EQ(command.size(), 3u);
    EXPECT_EQ(command[0], "tessera-node");
    EXPECT_EQ(command[1], "--config");
    bool config_mounted = false;
    for (const auto& mount : container["volumeMounts"]) {
      EXPECT_TRUE(volumes.count(mount["name"].as<std::string>())) << "undeclared volume " << mount["name"];
      if (mount["subPath"] && mount["subPath"].as<std::string>() == config_key)
        config_mounted = mount["mountPath"].as<std::string>() == command[2];
    }
    EXPECT_TRUE(config_mounted) << command[2] << " is not the ConfigMap's " << config_key;
  }

  // The ConfigMap's config as a file here, its key and plugin paths those of this machine.
  fs::path local_config(const std::string& key) const {
    auto text = object("ConfigMap/tessera-config")["data"][key].as<std::string>();
    const std::map<std::string, std::string> replace = {
        {"/etc/tessera/keys/", (dir_ / "keys").string() + "/"},
        {"/opt/tessera/plugins/libtessera_examples.so", TESSERA_EXAMPLES_PLUGIN}};
    for (const auto& [from, to] : replace)
      for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    std::ofstream(dir_ / key) << text;
    return dir_ / key;
  }

  fs::path dir_;
  std::map<std::string, YAML::Node> objects_;
};

TEST_F(Manifests, TheSchedulerIsAStatefulSetWithAPersistentVolumeForItsStore) {
  const auto scheduler = object("StatefulSet/tessera-scheduler");
  EXPECT_EQ(scheduler["apiVersion"].as<std::string>(), "apps/v1");
  EXPECT_EQ(scheduler["spec"]["replicas"].as<int>(), 1);
  const auto headless = object("Service/" + scheduler["spec"]["serviceName"].as<std::string>());
  EXPECT_EQ(headless["spec"]["clusterIP"].as<std::string>(), "None");
  check_pod(scheduler, "scheduler.toml");
  // The store (node.data_dir) is on the volume claimed per pod.
  const auto config = object("ConfigMap/tessera-config")["data"]["scheduler.toml"].as<std::string>();
  std::string data_mount;
  for (const auto& mount : scheduler["spec"]["template"]["spec"]["containers"][0]["volumeMounts"])
    if (mount["name"].as<std::string>() == "data") data_mount = mount["mountPath"].as<std::string>();
  ASSERT_FALSE(data_mount.empty());
  EXPECT_NE(config.find("data_dir = \"" + data_mount + "/"), std::string::npos) << config;
}

TEST_F(Manifests, WorkersAreAScalableDeploymentThatReachTheSchedulersService) {
  const auto workers = object("Deployment/tessera-worker");
  EXPECT_GE(workers["spec"]["replicas"].as<int>(), 1);
  check_pod(workers, "worker.toml");
  const auto service = object("Service/tessera-scheduler");
  const auto port = service["spec"]["ports"][0]["port"].as<int>();
  const auto worker_config = object("ConfigMap/tessera-config")["data"]["worker.toml"].as<std::string>();
  EXPECT_NE(worker_config.find("scheduler = \"tcp://tessera-scheduler:" + std::to_string(port) + "\""),
            std::string::npos);
  const auto scheduler_config =
      object("ConfigMap/tessera-config")["data"]["scheduler.toml"].as<std::string>();
  EXPECT_NE(scheduler_config.find(":" + std::to_string(port) + "\""), std::string::npos);
  // The Service selects the scheduler's pods, not the workers'.
  const auto selector = service["spec"]["selector"].as<std::map<std::string, std::string>>();
  const auto scheduler_labels =
      object("StatefulSet/tessera-scheduler")["spec"]["template"]["metadata"]["labels"];
  for (const auto& [label, value] : selector) EXPECT_EQ(scheduler_labels[label].as<std::string>(), value);
  EXPECT_NE(
      workers["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"].as<std::string>(),
      selector.at("app.kubernetes.io/component"));
}

TEST_F(Manifests, TheSecretHoldsKeysAndTheConfigsPassTesseraNodesCheck) {
  const auto secret = object("Secret/tessera-keys");
  fs::create_directories(dir_ / "keys");
  for (const char* file :
       {"scheduler.key", "scheduler.pub", "worker.key", "worker.pub", "authorized_keys", "worker_peers"}) {
    ASSERT_TRUE(secret["data"][file]) << "the Secret has no " << file;
    std::ofstream(dir_ / "keys" / file) << base64_decode(secret["data"][file].as<std::string>());
  }
  for (const char* config : {"scheduler.toml", "worker.toml"}) {
    int code = 0;
    const auto out = tessera::testing::run_command(
        std::string(TESSERA_NODE_BINARY) + " --check-config --config " + local_config(config).string(), code);
    EXPECT_EQ(code, 0) << config << ": " << out;
    EXPECT_NE(out.find("a usable config"), std::string::npos) << out;
  }
  // A broken key in the Secret is caught by the same check, naming the key.
  std::ofstream(dir_ / "keys" / "authorized_keys") << "not-a-key\n";
  int code = 0;
  const auto out =
      tessera::testing::run_command(std::string(TESSERA_NODE_BINARY) + " --check-config --config " +
                                        local_config("scheduler.toml").string(),
                                    code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("security.authorized_keys_file"), std::string::npos) << out;
  // The kustomization lists every manifest, the Secret make-keys.sh writes included.
  const auto kustomization = YAML::LoadFile((kManifests / "kustomization.yaml").string());
  for (const auto& resource : kustomization["resources"]) {
    const auto name = resource.as<std::string>();
    EXPECT_TRUE(fs::exists(kManifests / name) || name == "secret.yaml") << name;
  }
}

}  // namespace
