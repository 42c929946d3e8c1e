/*
 * write_pool.h — a RESP worker's side of the write workers (resp_server/write_worker.cpp), the
 * processes that run RESP writes so that a role's triggers, defaults and checks never hold the
 * loop that serves the worker's other connections (CommandProcessor's WriteOffload).
 *
 * A write claims an idle write worker (WriteWorkers::claim, host.h: one write at a time each),
 * goes to it whole over a Unix socket of its own (the abstract address
 * write_worker_address names; the write worker takes connections from this server's RESP
 * workers only), and its connection waits (its later requests behind it) until the reply frame
 * comes back; then the request runs again and takes the reply. With every write worker busy, a
 * write waits for one; with none running (starting, or local_cache.resp_write_workers = 0) the
 * worker runs it itself. A write worker that ends while it runs a write answers that write with
 * an error: whether it committed is not known, as when a backend's connection breaks.
 */
#pragma once

#include "resp_server/clients/host.h"
#include "resp_server/commands/command_table.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace local_cache::resp {

struct Server;

/* The abstract Unix socket address write worker `number` of the server whose postmaster is
 * `postmaster_pid` listens on. */
socklen_t write_worker_address(int postmaster_pid, int number, sockaddr_un *address);

class WritePool final : public WriteOffload {
public:
	WritePool(Server *server, WriteWorkers &workers, int write_workers);
	~WritePool();
	WritePool(const WritePool &) = delete;
	WritePool &operator=(const WritePool &) = delete;

	Outcome run(const Request &request, const Session &session, ReplyBuffer &out) override;
	/* Whether the connection's write runs in a write worker now (its reply will wake it). */
	bool in_flight(uint64_t session_id) const;
	/* A connection closed: a reply that came for it goes. */
	void forget(uint64_t session_id) { done_.erase(session_id); }
	/* The worker shuts down: closes the sockets (their handles close with the loop). */
	void close();

	struct Link;

private:
	struct Done {
		std::string reply;
		int64_t duration_us;
		std::vector<std::string> tracked_keys;
		std::vector<std::string> uncaptured_keys;
	};
	bool send_job(Link &link, const Request &request, const Session &session);
	void take_reply(Link &link);
	void drop(Link &link, const char *why);
	void finish(Link &link, Done done);
	/* Runs the request of the connection with this session id again, if it still waits. */
	void retry(uint64_t session_id);

	Server *server_;
	WriteWorkers &workers_;
	std::vector<std::unique_ptr<Link>> links_;
	std::unordered_map<uint64_t, Done> done_; /* by session id, until its request runs again */
	std::deque<uint64_t> waiting_;            /* sessions whose write waits for a free write worker */
	std::string frame_;                        /* the job being sent */
	friend void on_link_readable(Link *link);
};

} // namespace local_cache::resp
