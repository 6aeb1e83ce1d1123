// The client protocol, declared once, as the worker protocol's rows are (nodes/wire_table.hpp): each
// request a client may send names the answer it gets, the scheduler's session that handles it and where
// it is answered; each kind the scheduler sends a client says how the client matches it to what waits for
// it. From these rows come the scheduler's dispatch (dispatch_client_request: one handler per request,
// a missing one is a compile error) and the client's routing of answers (ClientConnection). A new client
// message is its Cap'n Proto field, its wire-table row, a row here, its codec and its handler.
#pragma once

#include <cstdint>
#include <optional>

#include "nodes/wire_table.hpp"

namespace tessera::wire {

// Where a request is answered on the scheduler: on the gateway's I/O thread (cheap, bounded), on the query
// executor's threads (reads of the store), or by an actor (the scheduler, a stream, a GLM solver).
enum class AnsweredOn : std::uint8_t { io_thread, query_executor, actor };

// The scheduler's session that handles a request (nodes/client_session.hpp, stream_session.hpp,
// query_session.hpp).
enum class Session : std::uint8_t { client, stream, query };

// A request with no answer of its own: what comes back, if anything, comes as events.
inline constexpr Envelope::Which kNoAnswer = static_cast<Envelope::Which>(0xffff);

// X(REQUEST, ANSWER, SESSION, ANSWERED_ON): REQUEST names wire::Envelope::REQUEST.
#define TESSERA_CLIENT_REQUESTS(X)                                            \
  X(HEARTBEAT, Envelope::HEARTBEAT, client, io_thread)                        \
  X(SUBMIT, Envelope::RESULTS, client, actor)                                 \
  X(RELEASE, kNoAnswer, client, io_thread)                                    \
  X(CANCEL, kNoAnswer, client, actor)                                         \
  X(STATUS_REQUEST, Envelope::STATUS, client, actor)                          \
  X(WORKERS_REQUEST, Envelope::WORKERS, client, actor)                        \
  X(SIMULATIONS_REQUEST, Envelope::SIMULATIONS, client, io_thread)            \
  X(FUNCTIONS_REQUEST, Envelope::FUNCTIONS, client, io_thread)                \
  X(GLM, Envelope::GLM, client, actor)                                        \
  X(SHUTDOWN, kNoAnswer, client, io_thread)                                   \
  X(STREAM_OPEN, Envelope::STREAM_OPENED, stream, actor)                      \
  X(STREAM_PUSH, Envelope::STREAM_ACCEPTED, stream, actor)                    \
  X(STREAM_CLOSE, kNoAnswer, stream, actor)                                   \
  X(STREAM_ATTACH, Envelope::STREAM_OPENED, stream, actor)                    \
  X(STREAM_CANCEL, Envelope::STREAM_CANCELLED, stream, actor)                 \
  X(RESULTS_QUERY, Envelope::RESULTS_ANSWER, query, query_executor)           \
  X(CHECKPOINTS_REQUEST, Envelope::CHECKPOINTS_ANSWER, query, query_executor) \
  X(STREAMS_REQUEST, Envelope::STREAMS_ANSWER, query, query_executor)

// How a client matches what the scheduler sends it: to the request with the same id, to the oldest
// request of its kind (answers that carry no id: the scheduler answers those of one connection in the
// order asked, or with equal content), as an event of a table or stream it has (results, a stream's
// progress, an error), or as the connection's own (heartbeats tell it the scheduler is there; a refusal
// that the scheduler no longer knows it).
enum class Match : std::uint8_t { request_id, in_order, event, connection };

// X(KIND, MATCH, ID): ID reads the request id from an Envelope::Reader `e` (0 where none).
#define TESSERA_CLIENT_ANSWERS(X)                                            \
  X(HEARTBEAT, connection, 0)                                                \
  X(REFUSE, connection, 0)                                                   \
  X(STATUS, in_order, 0)                                                     \
  X(WORKERS, in_order, 0)                                                    \
  X(SIMULATIONS, in_order, 0)                                                \
  X(FUNCTIONS, in_order, 0)                                                  \
  X(STREAM_OPENED, request_id, e.getStreamOpened().getRequestId())           \
  X(STREAM_CANCELLED, request_id, e.getStreamCancelled().getRequestId())     \
  X(RESULTS_ANSWER, request_id, e.getResultsAnswer().getRequestId())         \
  X(CHECKPOINTS_ANSWER, request_id, e.getCheckpointsAnswer().getRequestId()) \
  X(STREAMS_ANSWER, request_id, e.getStreamsAnswer().getRequestId())         \
  X(GLM, request_id, e.getGlm().getSession())                                \
  X(RESULTS, event, 0)                                                       \
  X(STREAM_ACCEPTED, event, 0)                                               \
  X(STREAM_RESULTS, event, 0)                                                \
  X(STREAM_FINISHED, event, 0)                                               \
  X(ERROR, event, 0)

struct ClientRequestInfo {
  Envelope::Which request;
  Envelope::Which answer;  // kNoAnswer: none
  Session session;
  AnsweredOn answered_on;
};
#define TESSERA_CLIENT_REQUEST_INFO(REQUEST, ANSWER, SESSION, WHERE) \
  ClientRequestInfo{Envelope::REQUEST, ANSWER, Session::SESSION, AnsweredOn::WHERE},
inline constexpr ClientRequestInfo kClientRequests[] = {TESSERA_CLIENT_REQUESTS(TESSERA_CLIENT_REQUEST_INFO)};
#undef TESSERA_CLIENT_REQUEST_INFO

struct ClientAnswerInfo {
  Envelope::Which kind;
  Match match;
};
#define TESSERA_CLIENT_ANSWER_INFO(KIND, MATCH, ID) ClientAnswerInfo{Envelope::KIND, Match::MATCH},
inline constexpr ClientAnswerInfo kClientAnswers[] = {TESSERA_CLIENT_ANSWERS(TESSERA_CLIENT_ANSWER_INFO)};
#undef TESSERA_CLIENT_ANSWER_INFO

// The row of what the scheduler sent; nullptr for a kind a client is never sent.
constexpr const ClientAnswerInfo* find_client_answer(Envelope::Which kind) {
  for (const auto& info : kClientAnswers)
    if (info.kind == kind) return &info;
  return nullptr;
}

// The request id an answer carries (for Match::request_id rows), else nullopt.
inline std::optional<std::uint64_t> answer_request_id(Envelope::Reader e) {
  switch (e.which()) {
#define TESSERA_CLIENT_ANSWER_ID(KIND, MATCH, ID)               \
  case Envelope::KIND:                                          \
    if constexpr (Match::MATCH == Match::request_id) return ID; \
    return std::nullopt;
    TESSERA_CLIENT_ANSWERS(TESSERA_CLIENT_ANSWER_ID)
#undef TESSERA_CLIENT_ANSWER_ID
    default:
      return std::nullopt;
  }
}

// The tag a session's handler takes for one request: `void on(ClientRequest<Envelope::SUBMIT>, ...)`.
template <Envelope::Which Kind>
struct ClientRequest {
  static constexpr Envelope::Which kind = Kind;
};

// Calls the handler of `kind` on the session the table names: sessions.client.on(ClientRequest<K>{},
// args...), and so on. False for a kind that is not a client request.
template <class Sessions, class... Args>
bool dispatch_client_request(Envelope::Which kind, Sessions& sessions, Args&&... args) {
  switch (kind) {
#define TESSERA_CLIENT_DISPATCH(REQUEST, ANSWER, SESSION, WHERE)                          \
  case Envelope::REQUEST:                                                                 \
    sessions.SESSION.on(ClientRequest<Envelope::REQUEST>{}, std::forward<Args>(args)...); \
    return true;
    TESSERA_CLIENT_REQUESTS(TESSERA_CLIENT_DISPATCH)
#undef TESSERA_CLIENT_DISPATCH
    default:
      return false;
  }
}

}  // namespace tessera::wire
