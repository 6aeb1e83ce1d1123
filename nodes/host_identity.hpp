// Whether two processes can reach each other's socket files: workers on one host, in one network and
// mount namespace and run by one user, send each other chunks over ipc:// instead of TCP loopback.
#pragma once

#include <string>

namespace tessera {

// "BOOT_ID/UID/NET_NS/MNT_NS" for this process: equal for two processes only when they run on one
// booted kernel, as one user (a socket file's directory is the user's alone), in one network namespace
// and one mount namespace (so one path names one file). Empty when any part cannot be read, which
// matches nothing.
std::string this_host_identity();

// "HOSTNAME-PID" of this process: what tells a worker apart from another of the same name.
std::string process_origin();

}  // namespace tessera
