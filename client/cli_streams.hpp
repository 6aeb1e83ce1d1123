// The tessera CLI's stream commands: `stream push` (a CSV of parameter sets into a simulation) and
// `results` (queries over a stream's stored results). Both speak to the scheduler through the client
// library (tessera::Client, ResultQuery), so the CLI prints what the library answers.
#pragma once

#include <map>
#include <string>

namespace tessera::cli {

using Options = std::map<std::string, std::string>;

// --simulation NAME --input FILE.csv [--pool-size N] [--max-in-flight N] [--output FILE.csv] [--quiet]
int stream_push(const std::string& scheduler, const Options& options);
// --stream ID [--where FILTER] [--format summary|count|csv|json] [--field result[i]] [--bins N] [--output
// FILE]
int results(const std::string& scheduler, const Options& options);

}  // namespace tessera::cli
