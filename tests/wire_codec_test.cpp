// The wire codec: every value kind and graph layer round-trips, large payloads travel as their own
// frames, and hostile input — random bytes, truncation, bit flips, lying sizes and indexes, misaligned
// buffers, deep nesting — is refused with a WireError, never a crash.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <random>
#include <tessera/tessera.hpp>

#include "messages/wire_codec.hpp"

namespace {

using tessera::Value;
namespace wire = tessera::wire;

std::int64_t twice(std::int64_t x) {
  return 2 * x;
}
TESSERA_TASK(twice);
double dot(const std::vector<double>& a, double b) {
  return a.empty() ? b : a[0] * b;
}
TESSERA_TASK(dot);

// Copies each attachment into its own buffer, as a receiver would get them.
struct Received {
  std::vector<std::vector<std::byte>> buffers;
  std::vector<std::span<const std::byte>> frames;
  explicit Received(const wire::Attachments& a) {
    for (auto f : a.frames) buffers.emplace_back(f.begin(), f.end());
    for (auto& b : buffers) frames.emplace_back(b.data(), b.size());
  }
};

Value round_trip(const Value& v, wire::EncodeOptions options = {}) {
  auto encoded = wire::encode_value_message(v, options);
  Received received(encoded.attachments);
  return wire::decode_value_message(encoded.header_bytes(), received.frames);
}

Value sample() {
  Eigen::MatrixXd m(3, 2);
  m << 1, 2, 3, 4, 5, 6;
  return Value(Value::List{Value(), Value(std::int64_t{-5}), Value(2.5), Value(true), Value("text"),
                           Value(tessera::Bytes{{1, 2, 3}}), Value(std::vector<double>{1, 2}),
                           Value(Eigen::VectorXd(Eigen::VectorXd::LinSpaced(4, 0, 1))), Value(m),
                           Value(tessera::CustomValue{"Point", std::make_shared<const Value>(Value(1.0))})});
}

TEST(WireCodec, EveryKindRoundTrips) {
  EXPECT_EQ(round_trip(sample()), sample());
}

TEST(WireCodec, LargePayloadsTravelAsFramesNotInTheHeader) {
  Value big(std::vector<double>(1 << 20, 3.0));  // 8 MiB
  auto encoded = wire::encode_value_message(big);
  ASSERT_EQ(encoded.attachments.frames.size(), 1u);
  EXPECT_EQ(encoded.attachments.frames[0].size(), std::size_t{8} << 20);
  EXPECT_EQ(static_cast<const void*>(encoded.attachments.frames[0].data()),
            big.as_doubles().data());  // no copy
  EXPECT_LT(encoded.header_bytes().size(), 256u);
  EXPECT_EQ(round_trip(big), big);
  Eigen::MatrixXd m = Eigen::MatrixXd::Random(300, 200);
  EXPECT_EQ(round_trip(Value(m)), Value(m));
}

TEST(WireCodec, MisalignedHeaderIsCopiedAndRead) {
  auto encoded = wire::encode_value_message(sample());
  std::vector<std::byte> shifted(encoded.header_bytes().size() + 1);
  std::memcpy(shifted.data() + 1, encoded.header_bytes().data(), encoded.header_bytes().size());
  EXPECT_EQ(wire::decode_value_message(std::span(shifted).subspan(1), {}), sample());
}

TEST(WireCodec, OperationsRoundTrip) {
  std::vector<Value> inputs{Value(std::int64_t{1}), Value(std::int64_t{2})};
  tessera::Operation op(tessera::Registry::global().get("twice"), 2, {tessera::Column::per_task(inputs)});
  tessera::Operation refs(
      tessera::Registry::global().get("dot"), 2,
      {tessera::Column::per_task(std::vector<tessera::Arg>{
           tessera::Arg(Value(std::vector<double>(20000, 1.0))), tessera::Arg(tessera::TaskRef{op.id(), 1})}),
       tessera::Column::broadcast(tessera::Arg(Value(2.0)))});
  for (const tessera::Operation* original : {&op, &refs}) {
    capnp::MallocMessageBuilder builder;
    wire::Attachments attachments;
    wire::encode(*original, builder.initRoot<wire::Operation>(), attachments);
    auto flat = capnp::messageToFlatArray(builder);
    Received received(attachments);
    wire::HeaderReader reader(std::as_bytes(std::span<const capnp::word>(flat.begin(), flat.size())));
    auto decoded = wire::decode(reader.root<wire::Operation>(), received.frames);
    EXPECT_EQ(decoded->id(), original->id());
    EXPECT_EQ(&decoded->function(), &original->function());
    ASSERT_EQ(decoded->size(), original->size());
    for (std::uint32_t t = 0; t < original->size(); ++t)
      for (std::size_t j = 0; j < original->columns().size(); ++j) {
        const auto* a = original->columns()[j].literal(t);
        const auto* b = decoded->columns()[j].literal(t);
        ASSERT_EQ(a == nullptr, b == nullptr);
        if (a)
          EXPECT_EQ(*a, *b);
        else
          EXPECT_EQ(*original->columns()[j].reference(t), *decoded->columns()[j].reference(t));
      }
  }
}

TEST(WireCodec, UnknownFunctionAndWrongTypesAreRefused) {
  capnp::MallocMessageBuilder builder;
  auto op = builder.initRoot<wire::Operation>();
  op.setFunction("no_such_function");
  op.setSize(1);
  EXPECT_THROW(wire::decode(op.asReader(), {}), wire::WireError);
  op.setFunction("twice");
  auto column = op.initColumns(1)[0];
  column.initBroadcast().initLiteral().setText("not an int");
  try {
    wire::decode(op.asReader(), {});
    FAIL();
  } catch (const wire::WireError& e) {
    EXPECT_NE(std::string(e.what()).find("twice: argument 0 expects int, got string"), std::string::npos)
        << e.what();
  }
  op.setSize(1u << 30);
  EXPECT_THROW(wire::decode(op.asReader(), {}), wire::WireError);
}

TEST(WireCodec, LyingSizesAndIndexesAreRefused) {
  capnp::MallocMessageBuilder builder;
  auto v = builder.initRoot<wire::Value>();
  auto d = v.initDoubles();
  d.setCount(1000);
  d.setAttachment(0);
  std::vector<std::byte> small(16);
  std::vector<std::span<const std::byte>> frames{std::span<const std::byte>(small)};
  EXPECT_THROW(wire::decode(v.asReader(), frames), wire::WireError);  // frame too small
  d.setAttachment(7);
  EXPECT_THROW(wire::decode(v.asReader(), frames), wire::WireError);  // no such frame
  d.setCount(3);
  d.initInline(2);
  EXPECT_THROW(wire::decode(v.asReader(), frames), wire::WireError);  // count disagrees
  auto m = v.initMatrix();
  m.setRows(1ull << 40);
  m.setCols(1ull << 40);
  EXPECT_THROW(wire::decode(v.asReader(), frames), wire::WireError);  // overflow
}

namespace backends = tessera::backends;

TEST(WireCodec, ChunksRoundTripDenseAndSparseInBothTypes) {
  for (std::int64_t rows : {3, 300}) {  // inline and as a frame beside the header
    Eigen::MatrixXd m = Eigen::MatrixXd::Random(rows, 40);
    auto back = round_trip(Value(backends::Chunk::dense<double>(m))).as_chunk();
    EXPECT_EQ(back->dense<double>(), m);
    auto back32 = round_trip(Value(backends::Chunk::dense<float>(m.cast<float>()))).as_chunk();
    EXPECT_EQ(back32->dtype(), backends::DType::float32);
    EXPECT_EQ(back32->dense<float>(), m.cast<float>());
    backends::SparseMatrix<double> sparse = (m.array() > 0.8).select(m, 0.0).sparseView();
    auto back_sparse = round_trip(Value(backends::Chunk::sparse<double>(sparse))).as_chunk();
    ASSERT_EQ(back_sparse->backend(), backends::Backend::sparse);
    EXPECT_EQ(Eigen::MatrixXd(back_sparse->sparse<double>()), Eigen::MatrixXd(sparse));
    EXPECT_EQ(back_sparse->sparse<double>().nonZeros(), sparse.nonZeros());
  }
  auto empty = round_trip(Value(backends::Chunk::dense<double>(Eigen::MatrixXd(0, 5)))).as_chunk();
  EXPECT_EQ(empty->rows(), 0);
  EXPECT_EQ(empty->cols(), 5);
}

// Frames with owners: a large dense chunk keeps its frame (and the owner) instead of copying it; without an
// owner, or at an address not aligned for its elements, it is copied; below 64 KiB too (the echo test in
// transport_test).
TEST(WireCodec, LargeChunksAdoptFramesThatHaveOwners) {
  const Eigen::MatrixXd m = Eigen::MatrixXd::Random(200, 100);  // 160,000 bytes
  auto encoded = wire::encode_value_message(Value(backends::Chunk::dense<double>(m)), {});
  ASSERT_EQ(encoded.attachments.frames.size(), 1u);
  const auto frame = encoded.attachments.frames[0];
  // The frame's bytes twice in one owned buffer: at an address aligned for doubles, and one past it.
  auto buffer = std::make_shared<std::vector<std::byte>>(2 * frame.size() + 2 * sizeof(double));
  std::byte* aligned = buffer->data();
  std::byte* odd = buffer->data() + frame.size() + sizeof(double) + 1;
  std::memcpy(aligned, frame.data(), frame.size());
  std::memcpy(odd, frame.data(), frame.size());
  const std::vector<std::shared_ptr<const void>> owners{buffer};
  const std::vector<std::span<const std::byte>> at_aligned{{aligned, frame.size()}},
      at_odd{{odd, frame.size()}};
  const auto decode = [&](const wire::Frames& frames) {
    return wire::decode_value_message(encoded.header_bytes(), frames).as_chunk();
  };

  const long owners_before = buffer.use_count();
  const auto adopted = decode(wire::Frames(at_aligned, owners));
  EXPECT_TRUE(adopted->adopted());
  EXPECT_EQ(static_cast<const void*>(adopted->dense<double>().data()), static_cast<const void*>(aligned));
  EXPECT_EQ(buffer.use_count(), owners_before + 1);  // the chunk holds the owner
  const auto copied = decode(wire::Frames(at_aligned));
  EXPECT_FALSE(copied->adopted());
  const auto moved = decode(wire::Frames(at_odd, owners));
  EXPECT_FALSE(moved->adopted());
  buffer.reset();  // the adopted chunk keeps the frame alive
  EXPECT_EQ(adopted->dense<double>(), m);
  EXPECT_EQ(copied->dense<double>(), m);
  EXPECT_EQ(moved->dense<double>(), m);
}

TEST(WireCodec, HostileChunksAreRefused) {
  capnp::MallocMessageBuilder builder;
  auto v = builder.initRoot<wire::Value>();
  auto c = v.initChunk();
  c.setRows(2);
  c.setCols(2);
  c.setDtype(0);
  c.setBackend(0);
  std::vector<std::byte> bytes(3 * 8);
  c.initValues().setSize(bytes.size());
  c.getValues().setInline(kj::arrayPtr(reinterpret_cast<const kj::byte*>(bytes.data()), bytes.size()));
  EXPECT_THROW(wire::decode(v.asReader(), {}), wire::WireError);  // 3 values for a 2 x 2 chunk
  c.setDtype(7);
  EXPECT_THROW(wire::decode(v.asReader(), {}), wire::WireError);  // unknown element type
  c.setDtype(0);
  c.setBackend(9);
  EXPECT_THROW(wire::decode(v.asReader(), {}), wire::WireError);  // unknown backend
  c.setRows(1ull << 40);
  c.setBackend(0);
  EXPECT_THROW(wire::decode(v.asReader(), {}), wire::WireError);  // absurd shape
  // Sparse: a row index past the rows, and outer starts that go backwards.
  c.setRows(2);
  c.setBackend(1);
  auto blob = [](wire::Blob::Builder b, const std::vector<std::int64_t>& values) {
    b.setSize(values.size() * 8);
    b.setInline(kj::arrayPtr(reinterpret_cast<const kj::byte*>(values.data()), values.size() * 8));
  };
  blob(c.initOuterStarts(), {0, 1, 2});
  blob(c.initInnerIndices(), {0, 5});
  blob(c.initValues(), {0, 0});
  EXPECT_THROW(wire::decode(v.asReader(), {}), wire::WireError);
  blob(c.initOuterStarts(), {0, 2, 1});
  blob(c.initInnerIndices(), {0, 1});
  EXPECT_THROW(wire::decode(v.asReader(), {}), wire::WireError);
  blob(c.initOuterStarts(), {0, 1, 2});
  EXPECT_EQ(wire::decode(v.asReader(), {}).as_chunk()->sparse<double>().nonZeros(), 2);  // now valid
}

TEST(WireCodec, DeepNestingIsRefused) {
  capnp::MallocMessageBuilder builder;
  auto v = builder.initRoot<wire::Value>();
  for (int i = 0; i < 200; ++i) v = v.initList(1)[0];
  v.setInteger(1);
  auto flat = capnp::messageToFlatArray(builder);
  EXPECT_THROW(
      wire::decode_value_message(std::as_bytes(std::span<const capnp::word>(flat.begin(), flat.size())), {}),
      wire::WireError);
}

// A randomized fuzz of the decoder, run in CI: random bytes, truncations and bit flips of valid messages.
TEST(WireCodec, FuzzedInputNeverCrashes) {
  std::mt19937_64 rng{7};
  auto valid = wire::encode_value_message(sample());
  const auto bytes = valid.header_bytes();
  int refused = 0, accepted = 0;
  auto attempt = [&](std::span<const std::byte> input) {
    try {
      (void)wire::decode_value_message(input, {});
      ++accepted;
    } catch (const wire::WireError&) {
      ++refused;
    } catch (const tessera::TypeError&) {
      ++refused;
    }
  };
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> input;
    switch (i % 3) {
      case 0: {  // random bytes
        input.resize((rng() % 64) * 8 + (rng() % 2 ? 0 : rng() % 8));
        for (auto& b : input) b = static_cast<std::byte>(rng());
        break;
      }
      case 1: {  // truncated valid message
        input.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(rng() % bytes.size()));
        break;
      }
      default: {  // valid message with flipped bits
        input.assign(bytes.begin(), bytes.end());
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
          input[rng() % input.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
      }
    }
    attempt(input);
  }
  EXPECT_GT(refused, 10000);
  EXPECT_GT(accepted, 0);
}

}  // namespace
