// The actor side of the wire table (nodes/wire_table.hpp): each row that carries an actor message is a
// Route, and from the routes of one direction come a proxy's behavior (every actor message it receives
// goes out as its envelope) and the dispatch of received envelopes to an actor. What one kind's body
// looks like on the wire is its WireBody (nodes/wire_bodies.hpp).
#pragma once

#include <caf/all.hpp>
#include <type_traits>

#include "nodes/transport.hpp"
#include "nodes/wire_bodies.hpp"

namespace tessera::wire {

template <Envelope::Which Kind, std::uint8_t Directions, class Atom, class Payload>
struct Route {
  static constexpr Envelope::Which kind = Kind;
  static constexpr std::uint8_t directions = Directions;
  using atom = Atom;
  using payload = Payload;
};

template <class... Routes>
struct RouteList {};

namespace detail {

template <class Route, class List>
struct prepend;
template <class Route, class... Routes>
struct prepend<Route, RouteList<Routes...>> {
  using type = RouteList<Route, Routes...>;
};

// The routes carried in `direction`: rows with an actor message that travel that way.
template <std::uint8_t Direction, class... Rows>
struct carried;
template <std::uint8_t Direction>
struct carried<Direction> {
  using type = RouteList<>;
};
template <std::uint8_t Direction, class Row, class... Rows>
struct carried<Direction, Row, Rows...> {
  using rest = typename carried<Direction, Rows...>::type;
  static constexpr bool keep = !std::is_same_v<typename Row::atom, no_atom> && (Row::directions & Direction);
  using type = std::conditional_t<keep, typename prepend<Row, rest>::type, rest>;
};

#define TESSERA_WIRE_ROUTE(KIND, NAME, DIRECTIONS, COST, ATOM, PAYLOAD) \
  , Route<Envelope::KIND, static_cast<std::uint8_t>(DIRECTIONS), ATOM, PAYLOAD>
template <std::uint8_t Direction, class Unused, class... Rows>
struct carried_rows {
  using type = typename carried<Direction, Rows...>::type;
};
template <std::uint8_t Direction>
using routes_in = typename carried_rows<Direction, void TESSERA_WIRE_MESSAGES(TESSERA_WIRE_ROUTE)>::type;
#undef TESSERA_WIRE_ROUTE

// One handler of a forwarding behavior: the route's actor message, encoded and handed to `send`.
template <class R, class Send>
auto forward_one(Send send) {
  if constexpr (std::is_same_v<typename R::payload, NoPayload>) {
    return [send](typename R::atom) {
      send(R::kind,
           [](Envelope::Builder e, EncodeContext& c) { WireBody<R::kind>::encode(e, NoPayload{}, c); });
    };
  } else {
    return [send](typename R::atom, const typename R::payload& payload) {
      send(R::kind,
           [&payload](Envelope::Builder e, EncodeContext& c) { WireBody<R::kind>::encode(e, payload, c); });
    };
  }
}

template <class R>
void deliver_one(Envelope::Reader envelope, const DecodeContext& context, const caf::actor& target) {
  if constexpr (std::is_same_v<typename R::payload, NoPayload>) {
    caf::anon_send(target, R::atom::value);
  } else {
    caf::anon_send(target, R::atom::value, WireBody<R::kind>::decode(envelope, context));
  }
}

template <class... Routes, class Send, class... Extra>
caf::behavior forwarding(RouteList<Routes...>, Send send, Extra... extra) {
  return caf::behavior{forward_one<Routes>(send)..., std::move(extra)...};
}

template <class... Routes>
bool deliver(RouteList<Routes...>, Envelope::Reader envelope, const DecodeContext& context,
             const caf::actor& target) {
  const auto which = envelope.which();
  return ((which == Routes::kind && (deliver_one<Routes>(envelope, context, target), true)) || ...);
}

// The typed-actor signature of a route's actor message (a reacts_to: nothing is answered over the wire).
template <class R>
struct route_signature {
  using type =
      caf::typed_mpi<caf::detail::type_list<typename R::atom, typename R::payload>, caf::output_tuple<void>>;
};
template <Envelope::Which Kind, std::uint8_t Directions, class Atom>
struct route_signature<Route<Kind, Directions, Atom, NoPayload>> {
  using type = caf::typed_mpi<caf::detail::type_list<Atom>, caf::output_tuple<void>>;
};

template <class Interface, class... Routes>
constexpr bool implements_exactly(RouteList<Routes...>) {
  using signatures = typename Interface::signatures;
  return sizeof...(Routes) == caf::detail::tl_size<signatures>::value &&
         (caf::detail::tl_contains<signatures, typename route_signature<Routes>::type>::value && ...);
}

}  // namespace detail

// Every actor message that travels in `direction`, as the table says.
template <Direction D>
using RoutesIn = detail::routes_in<static_cast<std::uint8_t>(D)>;

// A behavior that takes every actor message of the routes in `D` and calls
// `send(kind, fill)`, where `fill(envelope, context)` writes the message's envelope; `extra` handlers
// take what is the proxy's own business.
template <Direction D, class Send, class... Extra>
caf::behavior forwarding_behavior(Send send, Extra... extra) {
  return detail::forwarding(RoutesIn<D>{}, std::move(send), std::move(extra)...);
}

// Whether the actor messages of the routes in `D` are exactly the protocol `Interface` (a proxy that
// stands for such an actor forwards all of it and nothing else).
template <class Interface, Direction D>
inline constexpr bool routes_implement = detail::implements_exactly<Interface>(RoutesIn<D>{});

// Decodes an envelope of a route in `D` and sends its actor message to `target`; false when its kind is
// not one of them (the caller handles it, or refuses it).
template <Direction D>
bool deliver_to_actor(Envelope::Reader envelope, const DecodeContext& context, const caf::actor& target) {
  return detail::deliver(RoutesIn<D>{}, envelope, context, target);
}

}  // namespace tessera::wire
