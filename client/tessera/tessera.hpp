// Tessera's public API in one header.
#pragma once

#include "graph/codec.hpp"
#include "graph/errors.hpp"
#include "graph/generator.hpp"
#include "graph/graph_spec.hpp"
#include "graph/registry.hpp"
#include "graph/value.hpp"
#include "tessera/as_completed.hpp"
#include "tessera/bag.hpp"
#include "tessera/client.hpp"
#include "tessera/delayed.hpp"
#include "tessera/future.hpp"
#include "tessera/local_cluster.hpp"
#include "tessera/plugins.hpp"
#include "tessera/programs.hpp"
#include "tessera/progress.hpp"
