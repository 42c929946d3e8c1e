/*
 * fake_tables.h — the in-memory "database" the command tests' fakes share (fake_reads.h,
 * fake_writes.h, fake_server.h): tables by prefix with rows as JSON plus column values, the
 * per-prefix switches that make a lookup answer NoPermission, Failed or Busy (with the message,
 * as the PostgreSQL side answers them: never an exception), the clock, and what reached it.
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace resp_test {

using local_cache::parse_canonical_int64;
using local_cache::resp::AuthenticatedRole;
using local_cache::resp::AuthResult;
using local_cache::resp::Batches;
using local_cache::resp::CacheHits;
using local_cache::resp::DataSources;
using local_cache::resp::FieldSink;
using local_cache::resp::InfoStats;
using local_cache::resp::KeySink;
using local_cache::resp::Logins;
using local_cache::resp::LookupResult;
using local_cache::resp::parse_row_key;
using local_cache::resp::RowKey;
using local_cache::resp::RowReader;
using local_cache::resp::RowWriter;
using local_cache::resp::ScanCursorKey;
using local_cache::resp::ScanPosition;
using local_cache::resp::ServerInfo;
using local_cache::resp::Session;
using local_cache::resp::SetOptions;
using local_cache::resp::SetOutcome;
using local_cache::resp::ValueSink;

struct FakeTables {
	struct Row {
		std::string json;
		std::vector<std::pair<std::string, std::optional<std::string>>> columns; /* nullopt = NULL */
	};
	using Tables = std::map<std::string, std::map<int64_t, Row>, std::less<>>;

	Tables tables;
	std::set<std::string, std::less<>> forbidden_prefixes; /* answer NoPermission */
	std::set<std::string, std::less<>> failing_prefixes;   /* answer Failed */
	std::set<std::string, std::less<>> busy_prefixes;      /* answer Busy (locked by another transaction) */

	int writes = 0; /* rows written, by the writer; EXEC's rollback takes its count back */
	/* Lookups that reached a fake without a role (the fuzz target fails on any). */
	int calls_without_role = 0;

	int64_t clock_microseconds = 1764500000123456; /* 2025-11-30 10:53:20.123456 UTC */

	FakeTables()
	{
		tables["items"][1] = Row{R"({"id":1,"value":"one"})",
								 {{"id", "1"}, {"value", "one"}, {"note", std::nullopt}}};
		tables["items"][2] = Row{R"({"id":2,"value":"two"})",
								 {{"id", "2"}, {"value", "two"}, {"note", "second"}}};
		tables["items"][-7] = Row{R"({"id":-7,"value":"negative"})", {{"id", "-7"}, {"value", "negative"}}};
		tables["items"][INT64_MAX] = Row{R"({"id":9223372036854775807})", {{"id", "9223372036854775807"}}};
		tables["odd"][7] = Row{R"({"id":7})", {{"id", "7"}}};
		tables["secret"][1] = Row{R"({"id":1,"secret":true})", {{"id", "1"}}};
		forbidden_prefixes.insert("secret");
		tables["broken"][1] = Row{"{}", {}};
		failing_prefixes.insert("broken");
	}

	/* Every data call needs the session's role (the server never makes one without). */
	void note_role(const Session &session)
	{
		if (!session.authenticated())
			calls_without_role++;
	}

	/* What a lookup of the prefix answers, as the PostgreSQL side would. */
	LookupResult check(std::string_view prefix) const
	{
		if (forbidden_prefixes.count(prefix))
			return LookupResult::no_permission("permission denied for table " + std::string(prefix));
		if (failing_prefixes.count(prefix))
			return LookupResult::failed("could not read table " + std::string(prefix));
		if (busy_prefixes.count(prefix))
			return LookupResult::busy("table \"" + std::string(prefix) + "\" is locked by another transaction");
		return LookupResult::ok();
	}
	/* SCAN and DBSIZE skip what a lookup would refuse. */
	bool refuses(std::string_view prefix) const { return check(prefix).status != LookupResult::Status::Ok; }

	/* What a write of the key answers before it writes; `replica`: a hot standby. */
	LookupResult check_write(const RowKey &key, bool replica) const
	{
		std::string_view prefix = split(key).prefix;
		if (tables.find(prefix) != tables.end() && !split(key).valid)
			return LookupResult::failed("invalid key '" + std::string(prefix) + ":" + std::string(key.id) +
										"': not a key of table " + std::string(prefix) + " (SQLSTATE 22023)");
		if (replica)
			return LookupResult::read_only();
		if (tables.find(prefix) == tables.end())
			return LookupResult::failed("no enabled table has the RESP prefix \"" + std::string(prefix) +
										"\" (SQLSTATE 42P01)");
		return check(prefix);
	}

	/* The fake's tables are keyed by integers; other ids name no row. */
	struct FakeKey {
		std::string_view prefix;
		int64_t id = 0;
		bool valid = false;
	};
	static FakeKey split(const RowKey &key)
	{
		FakeKey fake;
		fake.prefix = key.prefix;
		fake.valid = parse_canonical_int64(key.id, &fake.id);
		return fake;
	}

	static const Row *find_in(const Tables &in, const RowKey &key)
	{
		if (!split(key).valid)
			return nullptr;
		auto table = in.find(split(key).prefix);
		if (table == in.end())
			return nullptr;
		auto row = table->second.find(split(key).id);
		return row == table->second.end() ? nullptr : &row->second;
	}
	const Row *find(const RowKey &key) const { return find_in(tables, key); }

	/* WATCH's version of a row in `in`. */
	static std::string version_in(const Tables &in, const RowKey &key)
	{
		const Row *row = find_in(in, key);
		return row == nullptr ? "absent" : row->json + "|" + std::to_string(row->columns.size());
	}
};

} // namespace resp_test
