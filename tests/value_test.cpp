// Values and codecs: every built-in type round-trips, and a mismatch names both kinds.
#include <gtest/gtest.h>

#include <tessera/tessera.hpp>

namespace {

using tessera::from_value;
using tessera::to_value;
using tessera::Value;

struct Point {
  double x, y;
  bool operator==(const Point&) const = default;
};

}  // namespace

// A user type gets a codec by specializing tessera::Codec.
template <>
struct tessera::Codec<Point> {
  static std::string type_name() { return "Point"; }
  static Value encode(const Point& p) {
    return Value(CustomValue{"Point", std::make_shared<const Value>(Value(std::vector<double>{p.x, p.y}))});
  }
  static Point decode(const Value& v) {
    const auto& custom = v.as_custom();
    if (custom.type_name != "Point") throw TypeError("expected Point, got " + custom.type_name);
    const auto& xy = custom.payload->as_doubles();
    return Point{xy.at(0), xy.at(1)};
  }
};

namespace {

template <class T>
void round_trip(const T& x) {
  EXPECT_EQ(from_value<T>(to_value(x)), x);
}

TEST(Value, BuiltInTypesRoundTrip) {
  round_trip<int>(-7);
  round_trip<std::int64_t>(std::int64_t{1} << 50);
  round_trip<std::uint32_t>(4000000000u);
  round_trip<double>(3.25);
  round_trip<float>(1.5f);
  round_trip<bool>(true);
  round_trip<std::string>("text");
  round_trip(tessera::Bytes{{0, 1, 255}});
  round_trip(std::vector<double>{1.0, 2.0});
  round_trip(Eigen::VectorXd(Eigen::VectorXd::LinSpaced(5, 0, 1)));
  round_trip(Eigen::MatrixXd(Eigen::MatrixXd::Identity(3, 4)));
  round_trip(std::tuple<int, std::string, double>{1, "a", 2.5});
  round_trip(std::pair<bool, std::int64_t>{false, 9});
  round_trip(std::vector<std::vector<double>>{{1}, {2, 3}});
  round_trip(std::vector<std::tuple<std::string, Eigen::VectorXd>>{{"v", Eigen::VectorXd::Ones(2)}});
  round_trip(Point{1, 2});
}

TEST(Value, CopiesShareLargePayloads) {
  Value big(std::vector<double>(1 << 20, 1.0));
  Value copy = big;
  EXPECT_EQ(&big.as_doubles(), &copy.as_doubles());
  EXPECT_EQ(big.payload_bytes(), (1u << 20) * sizeof(double));
}

TEST(Value, MismatchNamesBothKinds) {
  try {
    (void)from_value<std::string>(Value(std::int64_t{3}));
    FAIL() << "expected TypeError";
  } catch (const tessera::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("expected string, got int"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)from_value<int>(Value(std::int64_t{1} << 40)), tessera::TypeError);
  EXPECT_THROW((void)from_value<std::uint8_t>(Value(std::int64_t{-1})), tessera::TypeError);
  EXPECT_THROW((void)from_value<Point>(Value(1.0)), tessera::TypeError);
  EXPECT_THROW((void)(from_value<std::tuple<int, int>>(to_value(std::tuple<int>{1}))), tessera::TypeError);
  // An integer widens to double; a double never narrows to an integer.
  EXPECT_DOUBLE_EQ(from_value<double>(Value(std::int64_t{2})), 2.0);
  EXPECT_THROW((void)from_value<std::int64_t>(Value(2.0)), tessera::TypeError);
}

TEST(Value, ContentHashFollowsContent) {
  EXPECT_EQ(Value(std::vector<double>{1, 2}).content_hash(), Value(std::vector<double>{1, 2}).content_hash());
  EXPECT_NE(Value(std::vector<double>{1, 2}).content_hash(), Value(std::vector<double>{2, 1}).content_hash());
  EXPECT_NE(Value(std::int64_t{1}).content_hash(), Value(1.0).content_hash());
}

}  // namespace
