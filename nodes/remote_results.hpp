// Queries over stream results answered by the scheduler node's store, through a client's connection: the
// ResultSource a remote client's ResultQuery reads. Records and exports come in pages of the node's answer
// limit; each answer says where the next starts.
#pragma once

#include <memory>

#include "nodes/client_connection.hpp"
#include "storage/result_source.hpp"

namespace tessera {

std::shared_ptr<ResultSource> remote_results(std::weak_ptr<ClientConnection> connection);

}  // namespace tessera
