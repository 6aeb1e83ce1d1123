#include "node_templates.hpp"

#include <sstream>

namespace tessera::cli {
namespace fs = std::filesystem;

namespace {

toml::table& section(toml::table& root, std::string_view name) {
  if (auto* existing = root[name].as_table()) return *existing;
  root.insert_or_assign(name, toml::table{});
  return *root[name].as_table();
}

std::string absolute_from(const fs::path& base, const std::string& path) {
  if (path.empty()) return path;  // "": a temporary directory, kept as such
  const fs::path given(path);
  return (given.is_absolute() ? given : base / given).lexically_normal().string();
}

void absolutize(toml::table& root, std::string_view table, std::string_view key, const fs::path& base) {
  auto* t = root[table].as_table();
  if (!t) return;
  if (auto* text = (*t)[key].as_string()) text->get() = absolute_from(base, text->get());
}

}  // namespace

toml::table load_template(const fs::path& file) {
  std::error_code error;
  if (fs::is_directory(file, error)) throw TemplateError(file.string() + " is a directory, not a TOML file");
  if (!fs::exists(file, error)) throw TemplateError(file.string() + " does not exist");
  try {
    auto root = toml::parse_file(file.string());
    for (auto&& [key, node] : root)
      if (!node.is_table())
        throw TemplateError(file.string() + ":" + std::to_string(node.source().begin.line) + ": '" +
                            std::string(key.str()) + "' must be a table ([" + std::string(key.str()) + "])");
    return root;
  } catch (const toml::parse_error& e) {
    throw TemplateError(file.string() + ":" + std::to_string(e.source().begin.line) + ": " +
                        std::string(e.description()));
  }
}

std::string derive_node_config(const toml::table& tmpl, const fs::path& template_dir,
                               const NodeSettings& settings, const std::string& header_comment) {
  toml::table root = tmpl;
  const fs::path base = fs::absolute(template_dir);
  if (auto* plugins = root["plugins"]["paths"].as_array())
    for (auto& entry : *plugins)
      if (auto* text = entry.as_string()) text->get() = absolute_from(base, text->get());
  absolutize(root, "node", "data_dir", base);
  absolutize(root, "worker", "data_dir", base);
  absolutize(root, "dashboard", "token_file", base);

  auto& node = section(root, "node");
  node.insert_or_assign("role", settings.role);
  node.insert_or_assign("name", settings.name);
  const bool worker = settings.role == "worker";
  if (worker) {
    node.erase("data_dir");
    root.erase("dashboard");
    auto& w = section(root, "worker");
    w.insert_or_assign("scheduler", settings.scheduler_address);
    w.insert_or_assign("listen", settings.listen);
    if (auto* dir = w["data_dir"].as_string();
        dir && !dir->get().empty() && !settings.data_dir_suffix.empty())
      dir->get() = (fs::path(dir->get()) / settings.data_dir_suffix).string();
    if (auto* s = root["scheduler"].as_table()) s->erase("listen");
  } else {
    section(root, "scheduler").insert_or_assign("listen", settings.listen);
    if (auto* w = root["worker"].as_table()) w->erase("data_dir");
    const auto* dir = node["data_dir"].as_string();
    if ((!dir || dir->get().empty()) && !settings.default_data_dir.empty())
      node.insert_or_assign("data_dir", settings.default_data_dir.string());
  }

  toml::table security;
  security.insert_or_assign("curve", true);
  security.insert_or_assign("secret_key_file", settings.secret_key_file.string());
  security.insert_or_assign("public_key_file", settings.public_key_file.string());
  if (worker) security.insert_or_assign("scheduler_public_key", settings.scheduler_public_key);
  toml::array keys;
  for (const auto& key : settings.authorized_keys) keys.push_back(key);
  security.insert_or_assign("authorized_keys", std::move(keys));
  root.insert_or_assign("security", std::move(security));

  std::ostringstream out;
  std::istringstream comment(header_comment);
  for (std::string line; std::getline(comment, line);) out << "# " << line << "\n";
  out << root << "\n";
  return out.str();
}

}  // namespace tessera::cli
