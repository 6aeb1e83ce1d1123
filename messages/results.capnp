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
  attempts @3 :List(Text);       # the reasons of the failed attempts before the last (retries)
  timeline @5 :List(Float64);    # empty, or tessera::SetTimeline (pushed, dispatched, started, finished,
                                 # stored), seconds since the Unix epoch
  failure @4 :UInt8;             # with error: why (tessera::Failure: 1 error, 2 crash, 3 timeout, 4 cancelled)
}

struct StoredError {
  message @0 :Text;
  node @1 :Text;       # where it ran
}

# A stream's record.
struct StreamInfo {
  simulation @0 :Text;
  closed @1 :Bool;             # finished: closed by its client and every accepted set answered
  pushed @2 :UInt64;           # parameter sets accepted (written ahead): ids below it
  closeRequested @3 :Bool;     # its client closed it; it finishes once every set is answered
  poolSize @4 :UInt32;         # what it was opened with, so a restarted node resumes it
  maxInFlight @5 :UInt64;
  configKeys @6 :List(Text);
  configValues @7 :List(Values.Value);
  isolation @8 :UInt8;         # tessera::Isolation: 0 thread, 1 process
  timeoutSeconds @9 :Float64;  # per set; 0: none
  retries @10 :UInt32;
  parameterNames @11 :List(Text);  # what its client called the parameters (a CSV's header); kept in a
                                   # record of their own (key p), written once, not in this one
}

# Parameter sets a stream accepted in one push (ids from the key's on), written ahead so that a
# restarted node runs those without a stored result; deleted once every one of them is answered.
struct PendingBatch {
  parameters @0 :List(Values.Value);
  priorities @1 :List(Float64);  # aligned with parameters; empty: every one 0
  acceptedAt @2 :Float64;        # when the stream accepted them (SetTimeline's pushed)
}

# What a checkpoint record holds, beside its value (for `tessera checkpoints list`).
struct CheckpointInfo {
  function @0 :Text;    # the task function's registered name
  task @1 :Text;        # the task's readable key in the run that stored it
  bytes @2 :UInt64;     # the value record's size
  writtenMs @3 :Int64;  # when, in milliseconds since the Unix epoch
}
