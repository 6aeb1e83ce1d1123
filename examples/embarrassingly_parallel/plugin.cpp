// The examples plugin: a tessera-node that loads it (plugins.paths) can run costly_simulation for
// remote clients such as `embarrassingly_parallel --scheduler tcp://HOST:PORT`.
#include "simulation.hpp"
