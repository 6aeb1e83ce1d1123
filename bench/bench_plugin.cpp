// The benchmark's task functions as a tessera-node plugin.
#include "bench_tasks.hpp"
