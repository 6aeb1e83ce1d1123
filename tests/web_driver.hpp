// A real headless Chromium driven through ChromeDriver's W3C WebDriver protocol (Debian's chromium and
// chromium-driver): the test starts chromedriver on a free port, opens a session, loads pages, runs
// scripts in them and takes screenshots. Every wait has a deadline and names what it waited for.
#pragma once

// Eigen (which Tessera's headers include) goes before httplib, whose <resolv.h> defines `_res`.
#include <Eigen/Dense>
#include <Eigen/Sparse>
// clang-format off
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
// clang-format on

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/free_port.hpp"

namespace tessera::testing {

inline constexpr const char* kChromium = "/usr/bin/chromium";
inline constexpr const char* kChromeDriver = "/usr/bin/chromedriver";

// Empty when both are installed; otherwise what is missing, for a loud skip.
inline std::string missing_browser() {
  std::string missing;
  for (const char* program : {kChromium, kChromeDriver})
    if (access(program, X_OK) != 0) missing += std::string(missing.empty() ? "" : " and ") + program;
  return missing.empty()
             ? ""
             : missing + " (Debian's chromium and chromium-driver, installed by scripts/setup.sh)";
}

inline std::string base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, buffer = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) continue;  // padding, line breaks
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

class WebDriver {
 public:
  using Json = nlohmann::json;

  // Starts chromedriver and a headless Chromium session with a window of width x height.
  WebDriver(int width = 1400, int height = 1000) {
    port_ = tessera::testing::free_port();  // chromedriver binds it next
    pid_ = fork();
    if (pid_ == 0) {
      const std::string port_flag = "--port=" + std::to_string(port_);
      // Its log is only noise here; the session's errors come back in its answers.
      if (FILE* null = fopen("/dev/null", "w")) {
        dup2(fileno(null), STDOUT_FILENO);
        dup2(fileno(null), STDERR_FILENO);
      }
      execl(kChromeDriver, kChromeDriver, port_flag.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      httplib::Client http("127.0.0.1", port_);
      if (auto res = http.Get("/status");
          res && res->status == 200 && Json::parse(res->body)["value"]["ready"] == true)
        break;
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("chromedriver on port " + std::to_string(port_) +
                                 " was not ready within 30 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition with a deadline
    }
    const Json capabilities = {
        {"capabilities",
         {{"alwaysMatch",
           {{"browserName", "chrome"},
            {"goog:chromeOptions",
             {{"binary", kChromium},
              {"args",
               {"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run",
                "--window-size=" + std::to_string(width) + "," + std::to_string(height)}}}}}}}}};
    session_ = call("POST", "/session", capabilities)["sessionId"].get<std::string>();
  }

  ~WebDriver() {
    try {
      if (!session_.empty()) call("DELETE", "/session/" + session_, nullptr);
    } catch (const std::exception&) {
    }
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  WebDriver(const WebDriver&) = delete;
  WebDriver& operator=(const WebDriver&) = delete;

  void open(const std::string& url) { call("POST", path("/url"), {{"url", url}}); }

  // Runs `script` (a function body; `arguments` holds `args`) in the page and returns what it returns.
  Json run(const std::string& script, const Json& args = Json::array()) {
    return call("POST", path("/execute/sync"), {{"script", script}, {"args", args}});
  }

  // Waits until `script` returns true, at most `within`; throws naming `what` otherwise.
  void wait_until(const std::string& script, const std::string& what,
                  std::chrono::seconds within = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    for (;;) {
      if (run(script) == true) return;
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("the page did not get to " + what + " within " +
                                 std::to_string(within.count()) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a condition with a deadline
    }
  }

  // The page as a PNG, written to `file`.
  void screenshot(const std::filesystem::path& file) {
    const auto png = base64_decode(call("GET", path("/screenshot"), nullptr).get<std::string>());
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << png;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string session_;

  std::string path(const std::string& rest) const { return "/session/" + session_ + rest; }

  Json call(const std::string& method, const std::string& where, const Json& body) {
    httplib::Client http("127.0.0.1", port_);
    http.set_read_timeout(60);
    httplib::Result res = method == "GET"      ? http.Get(where.c_str())
                          : method == "DELETE" ? http.Delete(where.c_str())
                                               : http.Post(where.c_str(), body.dump(), "application/json");
    if (!res) throw std::runtime_error("chromedriver: no answer to " + method + " " + where);
    const auto answer = Json::parse(res->body);
    if (res->status != 200)
      throw std::runtime_error("chromedriver: " + method + " " + where + " answered " +
                               std::to_string(res->status) + ": " + answer.dump().substr(0, 400));
    return answer["value"];
  }
};

}  // namespace tessera::testing
