# The envelope of every message between Tessera processes (client, scheduler, workers). Ordinals are
# frozen: never renumber or reuse one; new message kinds are added at the end of the union. Large
# payloads travel as frames beside the envelope (see values.capnp, Doubles.attachment).
@0x90af4c712d0bcab0;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tessera::wire");

using Values = import "values.capnp";
using Stored = import "results.capnp";

enum Role {
  client @0;
  worker @1;
  scheduler @2;
}

# The first message of every connection.
struct Hello {
  role @0 :Role;
  name @1 :Text;
  threads @2 :UInt32;       # workers: compute threads
  memoryLimit @3 :UInt64;   # workers: bytes, 0 for none
  listen @4 :Text;          # workers: where peers fetch results
  publicKey @5 :Text;       # workers with CURVE: how peers reach `listen`
  localListen @6 :Text;     # workers: a socket file peers on the same host may dial instead of `listen`
  host @7 :Text;            # workers: who may dial `localListen` (boot id, user, namespaces; see host_identity)
  resume @8 :Data;          # clients: the session token a previous connection was welcomed with
  origin @9 :Text;          # workers: "HOSTNAME-PID" of their process (a duplicate name becomes NAME-ORIGIN)
}

struct Welcome {
  peerId @0 :UInt32;        # the server's number for this connection
  serverName @1 :Text;
  session @2 :Data;         # clients: a token naming this client's session; presented again in `resume`
  resumed @3 :Bool;         # clients: the hello's `resume` named a session the scheduler still holds
  delivered @4 :List(TableDelivered);  # when resumed: the session's result tables, and slots sent of each
}

# One result table of a resumed session: how many of its slots the scheduler has sent results of.
struct TableDelivered {
  sinkId @0 :UInt64;
  slots @1 :UInt64;         # deliveries sent, a slot sent twice counted twice
}

# The connection is not accepted: a protocol version mismatch, a message before hello, ...
struct Refuse {
  reason @0 :Text;
}

struct Heartbeat {
  tasksRunning @0 :UInt32;
}

# A message that was received but could not be handled; the connection stays open.
struct Error {
  reason @0 :Text;
}

# Client -> scheduler: operations to run and which of their tasks the client's result table wants.
struct Watch {
  op @0 :UInt64;
  firstTask @1 :UInt32;
  count @2 :UInt32;
  firstSlot @3 :UInt32;
}

struct Submit {
  sinkId @0 :UInt64;      # the client's result table
  slots @1 :UInt32;
  operations @2 :List(Values.Operation);
  watches @3 :List(Watch);
  checkpoint @4 :Bool;    # the watched tasks' results are stored as checkpoints
  again @5 :Bool;         # sent again on a resumed session: replaces the table of this id
}

enum TaskState {
  waiting @0;
  ready @1;
  running @2;
  done @3;
  erred @4;
  cancelled @5;
}

struct TaskFailure {
  function @0 :Text;
  key @1 :Text;
  message @2 :Text;
  cancelled @3 :Bool;
}

struct Delivery {
  slot @0 :UInt32;
  state @1 :TaskState;
  value @2 :Values.Value;
  error @3 :TaskFailure;   # set unless state is done
  held @4 :Bool;           # done, but the value stayed on its worker: fetched when asked for
}

# Scheduler -> client: finished slots of a result table.
struct Results {
  sinkId @0 :UInt64;
  deliveries @1 :List(Delivery);
  refused @2 :Text;       # not empty: the whole submission was refused (a limit it exceeds), every slot fails
}

# Client -> scheduler: slots whose last future is gone.
struct Release {
  sinkId @0 :UInt64;
  slots @1 :List(UInt32);
}

# Client -> scheduler: cancel these tasks and what depends on them.
struct Cancel {
  tasks @0 :List(Values.TaskRef);
}

# Scheduler -> client: what `tessera status` shows.
struct Status {
  name @0 :Text;
  workers @1 :UInt32;
  retiringWorkers @2 :UInt32;
  operations @3 :UInt64;
  tasksPending @4 :UInt64;
  resultsHeld @5 :UInt64;
  tasksDone @6 :UInt64;
  tasksErred @7 :UInt64;
  tasksCancelled @8 :UInt64;
  tasksStolen @9 :UInt64;
  clients @10 :UInt32;
  workersLost @11 :UInt64;
  tasksRecomputed @12 :UInt64;
  memory @13 :List(WorkerMemory);  # one per live worker
  tasksFromCheckpoint @14 :UInt64;
  checkpointsWritten @15 :UInt64;
  checkpointBytesWritten @16 :UInt64;
  checkpointWriteSeconds @17 :Float64;
  checkpointsCorrupt @18 :UInt64;
  checkpointError @19 :Text;
  checkpointsStored @20 :UInt64;
  setsDone @21 :UInt64;            # streams' parameter sets the workers ran, since start
  setsFailed @22 :UInt64;
}

# ---- Scheduler <-> worker and worker <-> worker ----

# Scheduler -> worker: the worker's id in the cluster (after the transport's welcome).
struct WorkerWelcome {
  workerId @0 :UInt32;
}

# Scheduler -> worker: how to reach another worker; an empty address means it left.
struct Peer {
  workerId @0 :UInt32;
  address @1 :Text;
  publicKey @2 :Text;
  localAddress @3 :Text;    # set when the scheduler found both workers on one host: dial it first
}

struct AssignRun {
  op @0 :UInt64;
  firstTask @1 :UInt32;
  count @2 :UInt32;
  firstSlot @3 :UInt32;
  adopt @4 :Bool;
  report @5 :Bool;
  checkpoint @6 :Bool;                # results go back to be stored as checkpoints
  restored @7 :List(Values.Value);   # empty, or one per task: results read from checkpoints
}

# Scheduler -> worker: batched task assignment. An operation's definition travels once per worker, with
# the first assignment that needs it.
struct Assign {
  operations @0 :List(Values.Operation);
  runs @1 :List(AssignRun);
}

struct Destination {
  worker @0 :UInt32;
  op @1 :UInt64;
  slot @2 :UInt32;
  column @3 :UInt16;
}

struct Subscription {
  op @0 :UInt64;
  slot @1 :UInt32;
  to @2 :Destination;
}

# Scheduler -> worker: when these slots are done, send their results to these destinations.
struct Subscribe {
  subscriptions @0 :List(Subscription);
}

# Scheduler -> worker: slots of one operation to free (drop) or not to run (cancel).
struct Slots {
  op @0 :UInt64;
  slots @1 :List(UInt32);
}

# Scheduler -> worker: give back up to `most` queued tasks of `op` for an idle worker.
struct Steal {
  op @0 :UInt64;
  most @1 :UInt32;
}

struct FailedTask {
  task @0 :UInt32;
  error @1 :TaskFailure;
}

# Worker -> scheduler: finished tasks of one operation; results only for watched tasks (else none).
struct Done {
  op @0 :UInt64;
  tasks @1 :List(UInt32);
  results @2 :List(Values.Value);
  failures @3 :List(FailedTask);
  busySeconds @4 :Float64;
  ran @5 :UInt32;
  held @6 :List(UInt32);   # indexes into tasks whose results stayed on the worker (fetched when asked)
  finishedAt @7 :Float64;  # when the job ended, seconds since the Unix epoch (for the task stream)
}

# Worker -> scheduler: inputs of its tasks it could not read back (damaged spilled records).
struct LostInput {
  producerOp @0 :UInt64;
  producerIndex @1 :UInt32;
  consumerOp @2 :UInt64;
  consumerSlot @3 :UInt32;
  column @4 :UInt16;
}
struct LostInputs {
  inputs @0 :List(LostInput);
}

# Worker -> scheduler: tasks taken back from a queue (work stealing).
struct Stolen {
  op @0 :UInt64;
  tasks @1 :List(UInt32);
}

struct Input {
  op @0 :UInt64;
  slot @1 :UInt32;
  column @2 :UInt16;
  value @3 :Values.Value;
}

# Worker -> worker: task results, sent straight to the worker whose tasks read them.
struct Inputs {
  worker @0 :UInt32;   # the receiving worker's id
  inputs @1 :List(Input);
}

# Worker -> scheduler, about every 0.5 s, and in what `tessera workers` and `tessera status` show: a
# worker's memory as its chunk store counts it.
struct WorkerMemory {
  workerId @0 :UInt32;
  limit @1 :UInt64;
  managedBytes @2 :UInt64;    # results held in memory
  spilledBytes @3 :UInt64;    # results held on disk only
  rss @4 :UInt64;             # its process's resident bytes above the process's start
  spills @5 :UInt64;
  unspills @6 :UInt64;
  spilledTotal @7 :UInt64;    # bytes written to disk, over its life
  unspilledTotal @8 :UInt64;  # bytes read back
  spillSeconds @9 :Float64;
  unspillSeconds @10 :Float64;
  corruptRecords @11 :UInt64;
  paused @12 :Bool;
  spillError @13 :Text;       # the last spill that failed; empty if none
  processRss @14 :UInt64;     # its process's resident bytes (VmRSS)
  processWorkers @15 :UInt32; # workers sharing that process
}

# Scheduler -> client: what `tessera workers` shows.
struct WorkerEntry {
  workerId @0 :UInt32;
  name @1 :Text;
  address @2 :Text;
  threads @3 :UInt32;
  memoryLimit @4 :UInt64;
  tasksAssigned @5 :UInt64;
  retiring @6 :Bool;
  memory @7 :WorkerMemory;
  setsRun @8 :UInt64;      # streams' parameter sets it ran, since it joined
}

# Scheduler -> client: one simulation a stream may name (tessera simulations).
struct SimulationEntry {
  name @0 :Text;
  program @1 :Bool;              # declared as a program ([simulations.NAME], register_program)
  parameters @2 :List(Text);     # a program's parameter names
  outputs @3 :List(Text);        # a program's result names
  arity @4 :Int32;               # elements of a parameter set; -1: any
  parameterType @5 :Text;        # a compiled simulation's parameter and result types
  resultType @6 :Text;
  threads @7 :UInt32;            # cores one set occupies (ranks x threads for a program)
  gpus @8 :UInt32;
  command @9 :List(Text);        # a program's argv (launcher first), placeholders unrendered
  identity @10 :Text;            # the scheduler's definition (graph/definition_identity.hpp)
}

# Scheduler -> client: one task function the cluster can run (tessera functions, Client::functions, and
# what a client with no definition of its own calls by name).
struct FunctionEntry {
  name @0 :Text;
  argumentTypes @1 :List(Text);
  resultType @2 :Text;
  identity @3 :Text;             # the scheduler's definition (graph/definition_identity.hpp)
}

# ---- Streams of parameter sets ----

struct ConfigEntry {
  key @0 :Text;
  value @1 :Values.Value;
}

# Client -> scheduler: open a stream; answered by streamOpened with the same requestId.
struct StreamOpen {
  requestId @0 :UInt64;
  simulation @1 :Text;
  poolSize @2 :UInt32;
  config @3 :List(ConfigEntry);
  maxInFlight @4 :UInt64;   # sets pushed and unanswered at once; the scheduler enforces it too
  isolation @5 :UInt8;      # 0: the scheduler's [streams] isolation, 1: thread, 2: process
  timeoutSeconds @6 :Float64;  # per set; 0: none
  retries @7 :UInt32;
  parameterNames @8 :List(Text);  # for exports' headers; empty: unnamed
  generator @9 :Text;             # an ensemble: the generator that proposes its sets; empty: the client
  generatorConfig @10 :List(ConfigEntry);
  budget @11 :UInt64;             # with a generator: the most sets it may propose
  simulationIdentity @12 :Text;   # the client's own definition of `simulation`; empty: it has none
  inputSets @13 :UInt64;          # the sets the client says it will push (a CSV's rows); 0: it does not say
  inputName @14 :Text;            # where they come from (a file's name), for people
  inputDigest @15 :Text;          # a digest of that input's bytes: a resume must be given the same
  resume @16 :UInt64;             # a stream id: push on into this incomplete stream (its settings are
                                  # its own; this message's input must match its input); 0: a new stream
}

# Client -> scheduler, after a reconnect: results of this open stream go to this connection now; the
# stored results of `unanswered` (pushed, no result received) are sent again. Answered by streamOpened
# with the same requestId (an error when there is no such stream); then streamAccepted says which
# pushed sets the stream has. The client then sends again what was not accepted, and its close if it
# had closed the stream.
struct StreamAttach {
  requestId @0 :UInt64;
  streamId @1 :UInt64;
  unanswered @2 :List(UInt64);
  resendFrom @3 :UInt64;  # an ensemble's client: k + 1 asks also for every stored result from id k on;
                          # 0: none
}

# Scheduler -> client: the stream's parameter sets with ids below upTo are written ahead.
struct StreamAccepted {
  streamId @0 :UInt64;
  upTo @1 :UInt64;
}

struct StreamOpened {
  requestId @0 :UInt64;
  streamId @1 :UInt64;
  error @2 :Text;         # set when the stream could not be opened (unknown simulation, ...)
  arity @3 :UInt32;       # parameters per set the simulation takes; 0 when it does not say
  programParameters @4 :List(Text);  # a program simulation's parameter names: the client refuses a set of
                                     # another length or with a non-finite number at the push; empty: none
  resumeFrom @5 :UInt64;  # a resumed stream: the ids below this are accepted; the client pushes from it
  simulation @6 :Text;    # a resumed stream's simulation
  unanswered @7 :List(UInt64);  # a resumed stream's sets accepted and not answered: the client's sink
                                # takes them over (their results come to it)
  maxInFlight @8 :UInt64;       # a resumed stream's own max_in_flight: the client pushes no further ahead
}

# Client -> scheduler: parameter sets with consecutive ids from firstId.
struct StreamPush {
  streamId @0 :UInt64;
  firstId @1 :UInt64;
  parameters @2 :List(Values.Value);
  priorities @3 :List(Float64);  # aligned with parameters (finite); empty: every one 0
  timeouts @4 :List(Float64);    # seconds, aligned with parameters; 0: the stream's; empty: all 0
}

# Client -> scheduler: cancel the accepted, unanswered sets of a stream that are in `ranges` (when any)
# and match `where` (when not empty). Any client of the node may, not only the one that opened it.
# Answered by streamCancelled with the same requestId.
struct StreamCancel {
  requestId @0 :UInt64;
  streamId @1 :UInt64;
  ranges @2 :List(IdRange);
  where @3 :Text;           # a results filter over id and parameters ("id >= 100", "parameters[0] > 2")
  whole @4 :Bool;           # the stream itself: every accepted set, and its pusher's further pushes
}

struct IdRange {
  first @0 :UInt64;
  last @1 :UInt64;          # one past the last id
}

struct StreamCancelled {
  requestId @0 :UInt64;
  error @1 :Text;           # why nothing was cancelled (an unknown stream, a bad filter)
  queued @2 :UInt64;        # sets dropped before they ran
  running @3 :UInt64;       # sets stopped (process isolation) or abandoned (thread isolation)
}

# Scheduler -> worker: these sets of a stream were answered as cancelled: drop them from queued jobs,
# stop the ones running.
struct SimulationCancel {
  streamId @0 :UInt64;
  ids @1 :List(UInt64);
}

struct StreamRecord {
  id @0 :UInt64;
  value @1 :Values.Value;
  failed @2 :Bool;
  error @3 :Text;
  node @4 :Text;
  parameters @5 :Values.Value;   # in query answers (records)
  failure @6 :UInt8;             # with failed: tessera::Failure (1 error, 2 crash, 3 timeout, 4 cancelled)
  attempts @7 :List(Text);       # the reasons of the failed attempts before the last
  timeline @8 :List(Float64);    # empty, or tessera::SetTimeline: pushed, dispatched, started, finished,
                                 # stored (seconds since the Unix epoch; 0 unknown)
  program @9 :Stored.ProgramOutcome;  # a program simulation's set: how its process ended; unset otherwise
  nodeIndex @10 :UInt16;         # 1 + where in the enclosing message's `nodes` the worker that ran it is;
                                 # 0: `node` says (failures), or unknown
}

# Scheduler -> client: results that are durable now. Worker -> scheduler: what a simulation job gave.
struct StreamResults {
  streamId @0 :UInt64;
  records @1 :List(StreamRecord);
  busySeconds @2 :Float64;   # worker -> scheduler only
  unrun @3 :List(UInt64);    # worker -> scheduler only: sets of the job given back unrun
  unavailable @4 :Text;      # worker -> scheduler only: why this worker cannot run the stream's simulation
                             # at all (a program's executable missing there); empty: it can
  nodes @5 :List(Text);      # scheduler -> client: the workers its records' nodeIndex name
}

struct StreamFinished {
  streamId @0 :UInt64;
  error @1 :Text;
}

# Scheduler -> worker: run these parameter sets of a stream on a pool of the simulation.
struct Simulate {
  streamId @0 :UInt64;
  simulation @1 :Text;           # unused since protocol version 2: the stream's SimulationSetup says it
  poolSize @2 :UInt32;           # unused since protocol version 2
  config @3 :List(ConfigEntry);  # unused since protocol version 2
  ids @4 :List(UInt64);
  parameters @5 :List(Values.Value);
  timeouts @6 :List(Float64);    # each set's, seconds (0: none), aligned with ids; empty: the stream's
}

# Scheduler -> worker: what every job of one stream shares, sent once before its first job there.
struct SimulationSetup {
  streamId @0 :UInt64;
  simulation @1 :Text;
  poolSize @2 :UInt32;           # simulation actors per worker; 0: one per compute thread
  config @3 :List(ConfigEntry);
  isolation @4 :UInt8;           # tessera::Isolation: 0 thread, 1 process
  timeoutSeconds @5 :Float64;    # per set; 0: none
  program @6 :ProgramSpec;       # set for a program simulation: the scheduler's declaration
  identity @7 :Text;             # the scheduler's definition; a worker whose own differs runs none of it
}

# A program declared as a simulation (graph/program_spec.hpp); checked again where it is decoded.
struct ProgramSpec {
  command @0 :List(Text);
  parameters @1 :List(Text);
  files @2 :List(TextPair);      # file name -> template text
  resultFormat @3 :UInt8;        # tessera::ProgramResultFormat
  resultFile @4 :Text;
  resultRegex @5 :Text;
  outputs @6 :List(Text);
  ranks @7 :UInt32;
  threads @8 :UInt32;
  gpus @9 :UInt32;
  launcher @10 :Text;
  launcherArgv @11 :List(Text);
  env @12 :List(TextPair);
  keep @13 :UInt8;               # tessera::KeepDirectories
  timeoutSeconds @14 :Float64;
  graceSeconds @15 :Float64;
  workdirRoot @16 :Text;
}

struct TextPair {
  key @0 :Text;
  value @1 :Text;
}

# Client -> scheduler: a query over a stream's stored results, answered as text (CSV, JSON, a summary).
struct ResultsQuery {
  requestId @0 :UInt64;
  streamId @1 :UInt64;
  filter @2 :Text;
  format @3 :Text;        # "summary", "count", "csv", "json"
  field @4 :Text;         # for summary: "result" or "result[i]"
  bins @5 :UInt32;
  first @6 :UInt64;       # for records: ids first <= id < last
  last @7 :UInt64;
}

# Client -> scheduler: list the checkpoints the node stores (a page at a time), or drop some.
struct CheckpointsRequest {
  requestId @0 :UInt64;
  function @1 :Text;        # only this function's (list and drop); empty: any
  after @2 :Text;           # list: keys after this one (the last of the previous page); empty: from the first
  limit @3 :UInt64;         # list: at most this many
  drop @4 :Bool;            # drop the selected ones instead of listing
  dropAll @5 :Bool;
  keys @6 :List(Text);      # drop: keys, or prefixes of at least 8 hex digits
}

struct CheckpointEntry {
  key @0 :Text;
  function @1 :Text;
  task @2 :Text;
  bytes @3 :UInt64;
  writtenMs @4 :Int64;
}

struct CheckpointsAnswer {
  requestId @0 :UInt64;
  error @1 :Text;
  entries @2 :List(CheckpointEntry);
  more @3 :Bool;            # the list goes on past this page
  dropped @4 :UInt64;
}

# Client -> scheduler: the store's streams, or (drop set) delete one finished stream and what it stored.
struct StreamsRequest {
  requestId @0 :UInt64;
  drop @1 :UInt64;          # a stream id to drop; 0: list them
}

struct StreamListing {
  id @0 :UInt64;
  simulation @1 :Text;
  closed @2 :Bool;          # finished
  closeRequested @3 :Bool;  # closed by its client, sets still to answer
  pushed @4 :UInt64;
  stored @5 :UInt64;
  inputSets @6 :UInt64;     # the sets its client said it would push; 0: it did not say
  endedEarly @7 :Text;      # why it ended before its input did ("closed by the client before its input
                            # ended"); empty: it did not
}

struct StreamsAnswer {
  requestId @0 :UInt64;
  error @1 :Text;
  streams @2 :List(StreamListing);
}

struct ResultsSummary {
  count @0 :UInt64;
  failed @1 :UInt64;
  numeric @2 :UInt64;
  mean @3 :Float64;
  min @4 :Float64;
  max @5 :Float64;
  histogram @6 :List(UInt64);
}

struct ResultsAnswer {
  requestId @0 :UInt64;
  text @1 :Text;
  error @2 :Text;
  summary @3 :ResultsSummary;          # format "summary"
  records @4 :List(StreamRecord);      # format "records"
  more @5 :Bool;                       # the answer was cut at the node's answer limit: ask again from nextId
  nextId @6 :UInt64;
  nodes @7 :List(Text);                # the workers its records' nodeIndex name
}

# ---- GLM fits ----

# Every hop of a GLM fit: client <-> scheduler (fit, fitted), solver <-> worker (load, loaded, evaluate,
# partials, solve, solved, release); finished and lost pass only inside the scheduler's process. One struct
# per kind, as actors/glm/messages.hpp's. Vectors and matrices are Values of kind vector or matrix, so that
# large ones travel as frames beside the header; decoding refuses any other kind.

# actors/glm/spec.hpp's GlmSpec. The scheduler validates the settings; decoding checks only the family.
struct GlmSpec {
  family @0 :UInt8;  # backends::glm::Family: 0 logistic, 1 normal, 2 poisson
  solver @1 :Text;
  regularizer @2 :Text;
  lambda @3 :Float64;
  l1Ratio @4 :Float64;
  fitIntercept @5 :Bool;
  maxIter @6 :Int64;
  tol @7 :Float64;
  lbfgsMemory @8 :Int64;
  rho @9 :Float64;
  adaptiveRho @10 :Bool;
  overRelaxation @11 :Float64;
  abstol @12 :Float64;
  reltol @13 :Float64;
  rows @14 :Int64;
  cols @15 :Int64;
}

struct GlmPartitionTask {
  op @0 :UInt64;
  task @1 :UInt32;
  firstRow @2 :Int64;
}

struct GlmFitRequest {
  spec @0 :GlmSpec;
  partitions @1 :List(GlmPartitionTask);
}

struct GlmFitted {
  error @0 :Text;
  beta @1 :Values.Value;  # a vector (empty with an error)
  iterations @2 :Int64;
  converged @3 :Bool;
  objective @4 :Float64;
  evaluations @5 :Int64;
  seconds @6 :Float64;
  rounds @7 :Int64;
  roundSeconds @8 :Float64;
  workerSeconds @9 :Float64;
}

struct GlmHeldPartition {
  op @0 :UInt64;
  slot @1 :UInt32;
  index @2 :Int64;
  firstRow @3 :Int64;
}

struct GlmLoad {
  spec @0 :GlmSpec;
  partitions @1 :List(GlmHeldPartition);
}

struct GlmLoaded {
  worker @0 :UInt32;
  error @1 :Text;
}

struct GlmEvaluate {
  round @0 :Int64;
  order @1 :UInt8;        # 0, 1 or 2
  beta @2 :Values.Value;  # a vector
}

struct GlmPartials {
  round @0 :Int64;
  error @1 :Text;
  loss @2 :Float64;
  gradient @3 :Values.Value;  # a vector
  hessian @4 :Values.Value;   # a matrix, or unset when not asked for
  workerSeconds @5 :Float64;
}

struct GlmLocalTarget {
  index @0 :Int64;
  target @1 :Values.Value;  # a vector
  start @2 :Values.Value;   # a vector
}

struct GlmSolve {
  round @0 :Int64;
  rho @1 :Float64;
  scale @2 :Float64;
  partitions @3 :List(GlmLocalTarget);
}

struct GlmLocalSolution {
  index @0 :Int64;
  solution @1 :Values.Value;  # a vector
}

struct GlmSolved {
  round @0 :Int64;
  error @1 :Text;
  solutions @2 :List(GlmLocalSolution);
  workerSeconds @3 :Float64;
}

struct GlmRelease {}

struct GlmFinished {}

struct GlmLost {
  worker @0 :UInt32;
}

struct GlmMessage {
  session @0 :UInt64;
  union {
    fit @1 :GlmFitRequest;
    fitted @2 :GlmFitted;
    load @3 :GlmLoad;
    loaded @4 :GlmLoaded;
    evaluate @5 :GlmEvaluate;
    partials @6 :GlmPartials;
    solve @7 :GlmSolve;
    solved @8 :GlmSolved;
    release @9 :GlmRelease;
    finished @10 :GlmFinished;
    lost @11 :GlmLost;
  }
}

struct Envelope {
  version @0 :UInt32;       # the sender's protocol version
  union {
    hello @1 :Hello;
    welcome @2 :Welcome;
    refuse @3 :Refuse;
    heartbeat @4 :Heartbeat;
    error @5 :Error;
    value @6 :Values.Value;  # one value (echoes, tests)
    submit @7 :Submit;
    results @8 :Results;
    release @9 :Release;
    cancel @10 :Cancel;
    statusRequest @11 :Void;
    status @12 :Status;
    workerWelcome @13 :WorkerWelcome;
    peer @14 :Peer;
    assign @15 :Assign;
    subscribe @16 :Subscribe;
    drop @17 :Slots;
    cancelSlots @18 :Slots;
    steal @19 :Steal;
    forget @20 :UInt64;
    shutdown @21 :Void;
    done @22 :Done;
    stolen @23 :Stolen;
    inputs @24 :Inputs;
    workersRequest @25 :Void;
    workers @26 :List(WorkerEntry);
    streamOpen @27 :StreamOpen;
    streamOpened @28 :StreamOpened;
    streamPush @29 :StreamPush;
    streamClose @30 :UInt64;
    streamResults @31 :StreamResults;
    streamFinished @32 :StreamFinished;
    simulate @33 :Simulate;
    simulated @34 :StreamResults;
    resultsQuery @35 :ResultsQuery;
    resultsAnswer @36 :ResultsAnswer;
    glm @37 :GlmMessage;
    simulationSetup @38 :SimulationSetup;
    simulationEnd @39 :UInt64;     # the stream's last job was sent: its setup can go
    memory @40 :WorkerMemory;
    resultsLost @41 :LostInputs;
    streamAttach @42 :StreamAttach;
    streamAccepted @43 :StreamAccepted;
    checkpointsRequest @44 :CheckpointsRequest;
    checkpointsAnswer @45 :CheckpointsAnswer;
    streamCancel @46 :StreamCancel;
    streamCancelled @47 :StreamCancelled;
    simulationCancel @48 :SimulationCancel;
    simulationsRequest @49 :Void;
    simulations @50 :List(SimulationEntry);
    functionsRequest @51 :Void;
    functions @52 :List(FunctionEntry);
    streamsRequest @54 :StreamsRequest;
    streamsAnswer @55 :StreamsAnswer;
  }
  # The frames each attachment travels in, when one is larger than a frame may be (transport.hpp,
  # kAttachmentPieceBytes); empty: one frame each.
  attachmentPieces @53 :List(UInt32);
}
