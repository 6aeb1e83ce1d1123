# Values and graph layers on the wire. Ordinals are frozen: never renumber or reuse one; add new fields
# and union members at the end only.
@0xbbbcf5127413547b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tessera::wire");

# A run of doubles: inline for small payloads, or the index of a frame that travels beside the
# Cap'n Proto header (chunk bytes are never copied into the header).
struct Doubles {
  count @0 :UInt64;
  union {
    inline @1 :List(Float64);
    attachment @2 :UInt32;
  }
}

struct Matrix {
  rows @0 :UInt64;
  cols @1 :UInt64;
  data @2 :Doubles;  # column-major, rows * cols values
}

struct Custom {
  typeName @0 :Text;
  payload @1 :Value;
}

# Raw bytes: inline when small, else a frame beside the header (as Doubles).
struct Blob {
  size @0 :UInt64;
  union {
    inline @1 :Data;
    attachment @2 :UInt32;
  }
}

# A block of an array. Dense chunks carry their elements column-major; sparse ones their compressed
# columns (outer starts, inner row indices, values, all little-endian). A cuda chunk travels as its host copy
# and is put back on a GPU by a receiver that has one.
struct Chunk {
  rows @0 :UInt64;
  cols @1 :UInt64;
  dtype @2 :UInt8;    # 0 float64, 1 float32
  backend @3 :UInt8;  # 0 cpu, 1 sparse, 2 cuda
  values @4 :Blob;
  outerStarts @5 :Blob;   # sparse only: cols + 1 Int64
  innerIndices @6 :Blob;  # sparse only: one Int64 per stored value
}

struct Value {
  union {
    none @0 :Void;
    integer @1 :Int64;
    real @2 :Float64;
    boolean @3 :Bool;
    text @4 :Text;
    bytes @5 :Data;
    doubles @6 :Doubles;
    vector @7 :Doubles;
    matrix @8 :Matrix;
    list @9 :List(Value);
    custom @10 :Custom;
    chunk @11 :Chunk;
  }
}

struct TaskRef {
  op @0 :UInt64;
  index @1 :UInt32;
}

struct Arg {
  union {
    literal @0 :Value;
    reference @1 :TaskRef;
  }
}

struct Column {
  union {
    broadcast @0 :Arg;
    perTask @1 :List(Arg);
    values @2 :List(Value);
  }
}

# One graph layer: a registered function applied to `size` tasks.
struct Operation {
  id @0 :UInt64;
  function @1 :Text;
  size @2 :UInt32;
  columns @3 :List(Column);
  keys @4 :List(Text);  # empty unless the user named every task
  identity @5 :Text;    # the sender's definition of `function` (graph/definition_identity.hpp); the
                        # receiver refuses (scheduler) or fails the tasks (worker) when its own differs
}
