# The envelope of every message between Tessera processes (client, scheduler, workers). Ordinals are
# frozen: never renumber or reuse one; new message kinds are added at the end of the union. Large
# payloads travel as frames beside the envelope (see values.capnp, Doubles.attachment).
@0x90af4c712d0bcab0;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tessera::wire");

using Values = import "values.capnp";

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
}

struct Welcome {
  peerId @0 :UInt32;        # the server's number for this connection
  serverName @1 :Text;
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
}

# Scheduler -> client: finished slots of a result table.
struct Results {
  sinkId @0 :UInt64;
  deliveries @1 :List(Delivery);
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
  }
}
