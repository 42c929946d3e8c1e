/*
 * fake_clients.h — the command tests' ClientDirectory: a worker whose connections are the test's
 * session and three more (ids 7 and 50 acting as its role, 60 as another), for CLIENT LIST,
 * CLIENT KILL and CLIENT TRACKING REDIRECT, plus ids taken to live on another running worker.
 */
#pragma once

#include "resp_server/tests/command_harness.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace resp_test {

using local_cache::resp::ClientDirectory;

/* Three more connections on the worker: two acting as the test session's role, one as another. */
struct FakeClients final : ClientDirectory {
	std::vector<Session> others;
	std::set<uint64_t> on_other_workers; /* ids client_exists accepts without a connection here */
	const Session *me = nullptr;
	std::vector<uint64_t> closed;

	void each_session(const std::function<void(const Session &)> &visit) override
	{
		visit(*me);
		for (const Session &s : others)
			visit(s);
	}
	void close_session(uint64_t id) override { closed.push_back(id); }
	bool client_exists(uint64_t id) override
	{
		if ((me != nullptr && me->id == id) || on_other_workers.count(id))
			return true;
		for (const Session &s : others)
			if (s.id == id)
				return true;
		return false;
	}
};

struct Worker {
	Connection c;
	FakeClients clients;
	Worker()
	{
		clients.me = &c.session;
		for (uint64_t id : {7, 50, 60}) {
			Session s;
			s.id = id;
			s.peer_address = "127.0.0.1:" + std::to_string(40000 + id);
			s.local_address = "127.0.0.1:6380";
			s.connected_at_ms = 4500 - int64_t(id) * 100; /* the harness's request came at 4500 */
			s.last_request_at_ms = 4500;
			s.role = id == 60 ? AuthenticatedRole{20, "alice"} : *c.session.role;
			clients.others.push_back(s);
		}
		c.processor.set_client_directory(&clients);
	}
};

} // namespace resp_test
