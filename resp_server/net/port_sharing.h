/*
 * port_sharing.h — whether a RESP port is shared only with this server's own workers.
 *
 * The workers of one server listen on the same port with SO_REUSEPORT, which the kernel allows
 * every process of the same user to join: a second server of the same OS user (every Debian
 * cluster runs as `postgres`; a standby on the primary's host copies its settings) would silently
 * take half of the clients. Before a worker listens, it looks at who listens on the port already
 * (/proc/net/tcp and tcp6, matched by socket inode against the descriptors of this server's
 * workers) and refuses, as a bind to a taken port fails, when anyone else does.
 */
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <functional>
#include <vector>

namespace local_cache::resp {

/* The processes of this server that may listen on its RESP port (its workers), as they are now. */
using OurProcesses = std::function<std::vector<pid_t>()>;

/*
 * Whether every socket that listens on the port of `address` (an AF_INET or AF_INET6 address;
 * an overlapping address counts: the same one, or either the wildcard) belongs to one of
 * `our_processes()`. They are asked only after the listeners were read: a worker records itself
 * before it listens, so a sibling that started listening meanwhile is known by then (asked
 * before, a worker starting beside it took its listener for another server's). `proc` is the
 * procfs root (tests pass a directory of their own).
 */
bool only_ours_listen(const sockaddr *address, const OurProcesses &our_processes, const char *proc = "/proc");

} // namespace local_cache::resp
