// ClusterOptions (scheduling/cluster_options.hpp): how a LocalCluster is sized.
#pragma once

#include "scheduling/cluster_options.hpp"
