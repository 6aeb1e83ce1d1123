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
  program @6 :ProgramOutcome;    # a program simulation's set: how its process ended; unset otherwise
  nodeIndex @7 :UInt16;          # in a run: 1 + where in the run's `nodes` the worker that ran it is; 0: unknown
}

# The results of consecutive ids first, first + 1, ... stored as one record under the first one's key
# (storage/result_store.cpp): a stream's job answers a run of consecutive sets at once, and one record for
# the run costs RocksDB one key, one memtable insert and one index entry instead of one per set.
struct StoredRun {
  results @0 :List(StoredResult);
  nodes @1 :List(Text);          # the workers that ran the run's sets, each named once
}

# tessera::ProgramOutcome: how a program's process ended and the last bytes it printed (at most 4 KiB each).
struct ProgramOutcome {
  exitStatus @0 :Int32;
  signal @1 :Int32;       # the signal that ended it; 0: it exited with exitStatus
  stdoutTail @2 :Text;
  stderrTail @3 :Text;
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
  generator @12 :Text;             # an ensemble's generator; empty: the client pushes the sets
  generatorConfigKeys @13 :List(Text);
  generatorConfigValues @14 :List(Values.Value);
  budget @15 :UInt64;              # the most sets its generator may propose
  resultNames @16 :List(Text);     # what the result's elements are called (a program's outputs); empty: unnamed
  program @17 :Bool;               # its simulation is a program (records carry a ProgramOutcome)
  inputSets @18 :UInt64;           # what its client said it would push (StreamSettings::input)
  inputName @19 :Text;
  inputDigest @20 :Text;
  endedEarly @21 :Text;            # (counters) why it was closed before its input ended; empty: it was not
}

# An ensemble generator's state (key g), written with one of its pushes (at most one a second), so
# that a restarted node resumes it where it was.
struct GeneratorCheckpoint {
  state @0 :Data;                  # the generator's own save()
  asked @1 :UInt64;                # the stream's ids proposed so far: ids below it
  toldFirst @2 :List(UInt64);      # the ids whose results it was told, as ranges [first, last)
  toldLast @3 :List(UInt64);
  sequence @4 :UInt64;             # sets the generator itself has proposed (its own count)
  segmentFirst @5 :List(UInt64);   # stream id segmentFirst[i] is the generator's set segmentSequence[i]
  segmentSequence @6 :List(UInt64);
  orphanFirst @7 :List(UInt64);    # ids proposed by a state lost in a restart: never told
  orphanLast @8 :List(UInt64);
}

# Parameter sets a stream accepted in one push (ids from the key's on), written ahead so that a
# restarted node runs those without a stored result; deleted once every one of them is answered.
struct PendingBatch {
  parameters @0 :List(Values.Value);
  priorities @1 :List(Float64);  # aligned with parameters; empty: every one 0
  acceptedAt @2 :Float64;        # when the stream accepted them (SetTimeline's pushed)
  timeouts @3 :List(Float64);    # their own timeouts in seconds, aligned; 0: the stream's; empty: all 0
}

# What a checkpoint record holds, beside its value (for `tessera checkpoints list`).
struct CheckpointInfo {
  function @0 :Text;    # the task function's registered name
  task @1 :Text;        # the task's readable key in the run that stored it
  bytes @2 :UInt64;     # the value record's size
  writtenMs @3 :Int64;  # when, in milliseconds since the Unix epoch
}
