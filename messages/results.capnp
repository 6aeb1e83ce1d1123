# What a node's store keeps for streams of parameter sets (storage/). Ordinals are frozen: add at the end.
@0xc4f1d2a9b3e56708;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tessera::wire");

using Values = import "values.capnp";

# The outcome of one parameter set: its result, or the error its simulation raised.
struct StoredResult {
  union {
    value @0 :Values.Value;
    error @1 :StoredError;
  }
  parameters @2 :Values.Value;   # the parameter set, for queries and export
}

struct StoredError {
  message @0 :Text;
  node @1 :Text;       # where it ran
}

# A stream's record.
struct StreamInfo {
  simulation @0 :Text;
  closed @1 :Bool;
  pushed @2 :UInt64;   # parameter sets accepted
}
