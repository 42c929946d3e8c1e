/*
 * fake_server.h — the command tests' Logins and ServerInfo: roles with passwords, a default
 * role, logins that stay pending for a while (a password check still running), and the
 * counters, role memberships and clock INFO, CLIENT LIST, SLOWLOG and TIME report.
 */
#pragma once

#include "resp_server/tests/fake_tables.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace resp_test {

class FakeLogins final : public Logins {
public:
	FakeLogins()
	{
		default_role_value = AuthenticatedRole{10, "cache_reader"};
		roles["alice"] = {20, "alice-pw"};
	}

	std::optional<AuthenticatedRole> default_role_value;
	std::string default_role_password = "reader-pw";
	std::map<std::string, std::pair<uint64_t, std::string>> roles; /* name -> (id, password) */
	/* The next this many logins answer Pending (a password check still running). */
	int pending_logins = 0;

	/* What reached the fake. */
	int authenticate_calls = 0;
	std::optional<std::string> last_auth_user; /* "(default)" for the default role */

	AuthResult authenticate(const Session &, std::optional<std::string_view> user,
							std::string_view password) override
	{
		authenticate_calls++;
		last_auth_user = user ? std::string(*user) : std::string("(default)");
		if (pending_logins > 0) {
			pending_logins--;
			return AuthResult::pending();
		}
		if (!user) {
			if (default_role_value && password == default_role_password)
				return AuthResult::ok(*default_role_value);
			return AuthResult::wrong_password();
		}
		auto role = roles.find(std::string(*user));
		if (role == roles.end() || role->second.second != password)
			return AuthResult::wrong_password();
		return AuthResult::ok(AuthenticatedRole{role->second.first, role->first});
	}

	std::optional<AuthenticatedRole> default_role(const Session &) override { return default_role_value; }

	void session_ended(const Session &) override {}
};

class FakeServerInfo final : public ServerInfo {
public:
	explicit FakeServerInfo(FakeTables &db) : db_(db)
	{
		info.local_cache_version = "1.0";
		info.process_id = 4242;
		info.tcp_port = 6380;
		info.bind_addresses = "127.0.0.1";
		info.uptime_seconds = 200000;
		info.connected_clients = 3;
		info.max_clients = 10000;
		info.total_connections_received = 17;
		info.total_commands_processed = 99;
		info.used_memory = 3 * 1024 * 1024 + 512 * 1024;
		info.max_memory = 128 * 1024 * 1024;
		info.keyspace_hits = 11;
		info.keyspace_misses = 5;
		info.evicted_keys = 2;
		info.proto_max_bulk_len = 512 * 1024 * 1024;
		info.client_query_buffer_limit = 1024 * 1024 * 1024;
	}

	InfoStats info;
	/* Roles (by id) with pg_read_all_stats's privileges, and (member, role) memberships. */
	std::set<uint64_t> stats_readers;
	std::set<std::pair<uint64_t, uint64_t>> memberships;

	bool sees_activity_of(const Session &session, uint64_t role) override
	{
		db_.note_role(session);
		return session.role && (stats_readers.count(session.role->id) > 0 ||
								(role != kEveryRole && memberships.count({session.role->id, role}) > 0));
	}

	void fill_info(InfoStats &stats) override { stats = info; }

	int64_t now_microseconds() override { return db_.clock_microseconds; }

private:
	FakeTables &db_;
};

} // namespace resp_test
