/*
 * fake_data_source.h — an in-memory DataSource for the command tests: tables by prefix, rows
 * as JSON plus column values, per-prefix permission and failure switches, passwords, and a
 * record of the calls made, so tests can see what reached "PostgreSQL".
 */
#pragma once

#include "resp_server/commands/data_source.h"
#include "resp_server/protocol/reply.h"

#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace resp_test {

using local_cache::resp::AuthenticatedRole;
using local_cache::resp::AuthResult;
using local_cache::resp::Session;
using local_cache::resp::DataSource;
using local_cache::resp::FieldSink;
using local_cache::resp::InfoStats;
using local_cache::resp::KeySink;
using local_cache::parse_canonical_int64;
using local_cache::resp::parse_row_key;
using local_cache::resp::ReplyWriter;
using local_cache::resp::ScanCursorKey;
using local_cache::resp::ScanPosition;
using local_cache::resp::SetOptions;
using local_cache::resp::SetOutcome;
using local_cache::resp::LookupResult;
using local_cache::resp::RowKey;
using local_cache::resp::Session;
using local_cache::resp::ValueSink;

class FakeDataSource final : public DataSource {
public:
	struct Row {
		std::string json;
		std::vector<std::pair<std::string, std::optional<std::string>>> columns; /* nullopt = NULL */
	};

	using Tables = std::map<std::string, std::map<int64_t, Row>, std::less<>>;
	Tables tables;
	std::set<std::string, std::less<>> forbidden_prefixes; /* answer NoPermission */
	std::set<std::string, std::less<>> failing_prefixes;   /* answer Failed */
	std::set<std::string, std::less<>> throwing_prefixes;  /* throw, as a PostgreSQL error would */
	std::set<std::string, std::less<>> busy_prefixes;      /* answer Busy (locked by another transaction) */

	std::optional<AuthenticatedRole> default_role_value;
	std::string default_role_password;
	std::map<std::string, std::pair<uint64_t, std::string>> roles; /* name -> (id, password) */

	/* Answer in reverse key order (a cache answers hits first, fills later) and once with an
	 * index it was never given, to check that the handlers do not trust the order or the index. */
	bool scramble_answers = true;

	/* reply_hits answers requests whose keys are all "hits" (rows, or keys of no table, or that
	 * do not parse) in place of get_rows, as the PostgreSQL side does; off: it never does. */
	bool reply_from_hits = false;

	/* What reached the fake. */
	int get_rows_calls = 0;
	int reply_hits_answers = 0;
	std::vector<std::pair<std::string, std::string>> last_keys; /* prefix, id */
	int authenticate_calls = 0;
	/* The next this many logins answer Pending (a password check still running). */
	int pending_logins = 0;
	std::optional<std::string> last_auth_user; /* "(default)" for the default role */

	InfoStats info;
	uint64_t key_count = 0;

	FakeDataSource()
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
		tables["throws"][1] = Row{"{}", {}};
		throwing_prefixes.insert("throws");

		default_role_value = AuthenticatedRole{10, "cache_reader"};
		default_role_password = "reader-pw";
		roles["alice"] = {20, "alice-pw"};

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
		key_count = 6;
	}

	bool reply_hits(const Session &, const std::string_view *keys, size_t count, ReplyWriter &reply) override
	{
		if (!reply_from_hits)
			return false;
		for (size_t i = 0; i < count; i++) {
			std::optional<RowKey> key = parse_row_key(keys[i]);
			if (key && tables.count(split(*key).prefix) &&
				(check(split(*key).prefix).status != LookupResult::Status::Ok ||
				 (split(*key).valid && find(*key) == nullptr)))
				return false;
		}
		for (size_t i = 0; i < count; i++) {
			std::optional<RowKey> key = parse_row_key(keys[i]);
			const Row *row = key ? find(*key) : nullptr;
			if (row != nullptr)
				reply.bulk(row->json);
			else
				reply.null();
		}
		reply_hits_answers++;
		return true;
	}

	LookupResult get_rows(const Session &, const RowKey *keys, size_t count, ValueSink &sink) override
	{
		get_rows_calls++;
		clock_microseconds += get_rows_cost_us;
		last_keys.clear();
		for (size_t i = 0; i < count; i++)
			last_keys.emplace_back(std::string(keys[i].prefix), std::string(keys[i].id));
		for (size_t i = 0; i < count; i++) {
			if (LookupResult refused = check(split(keys[i]).prefix); refused.status != LookupResult::Status::Ok)
				return refused;
		}
		if (scramble_answers)
			sink.value(count + 5, "never asked for");
		for (size_t n = 0; n < count; n++) {
			size_t i = scramble_answers ? count - 1 - n : n;
			if (const Row *row = find(keys[i]))
				sink.value(i, row->json);
		}
		return LookupResult::ok();
	}

	LookupResult get_columns(const Session &, const RowKey &key, const std::string_view *columns,
							 size_t count, ValueSink &sink) override
	{
		if (LookupResult refused = check(split(key).prefix); refused.status != LookupResult::Status::Ok)
			return refused;
		const Row *row = find(key);
		if (row == nullptr)
			return LookupResult::ok();
		for (size_t n = 0; n < count; n++) {
			size_t i = scramble_answers ? count - 1 - n : n;
			for (const auto &column : row->columns) {
				if (column.first == columns[i] && column.second)
					sink.value(i, *column.second);
			}
		}
		return LookupResult::ok();
	}

	LookupResult get_all_columns(const Session &, const RowKey &key, FieldSink &sink) override
	{
		if (LookupResult refused = check(split(key).prefix); refused.status != LookupResult::Status::Ok)
			return refused;
		if (const Row *row = find(key)) {
			for (const auto &column : row->columns) {
				if (column.second)
					sink.field(column.first, *column.second);
			}
		}
		return LookupResult::ok();
	}

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

	/* Tables in map order, numbered from 1; tables the fake refuses are skipped, as unreadable. */
	LookupResult scan_keys(const Session &, ScanPosition &position, size_t count, std::string_view key_start,
						   KeySink &sink) override
	{
		scan_calls++;
		size_t n = 0;
		uint64_t number = 0;
		for (const auto &[prefix, rows] : tables) {
			number++;
			if (number < position.table)
				continue;
			if (n == count) {
				position = scan_position(number, std::nullopt);
				return LookupResult::ok();
			}
			std::string head = prefix + ":";
			size_t common = std::min(head.size(), key_start.size());
			if (head.compare(0, common, key_start, 0, common) != 0 || refuses(prefix))
				continue;
			bool continuing = number == position.table && position.started;
			int64_t after = 0;
			if (continuing)
				std::memcpy(&after, position.after_key, sizeof after);
			for (auto row = continuing ? rows.upper_bound(after) : rows.begin();
				 row != rows.end() && n < count; ++row, n++) {
				sink.key(prefix, std::to_string(row->first));
				position = scan_position(number, row->first);
			}
			if (n == count && position.table == number && position.started)
				return LookupResult::ok();
		}
		position = ScanPosition();
		position.finished = true;
		return LookupResult::ok();
	}

	/* A fixed secret (a server makes a random one at start); the role as the session has it. */
	ScanCursorKey scan_cursor_key(const Session &session) override
	{
		ScanCursorKey key;
		for (size_t i = 0; i < ScanCursorKey::kSecretBytes; i++)
			key.secret[i] = static_cast<unsigned char>(secret_seed + i);
		key.role = session.role ? session.role->id : 0;
		key.database = 1;
		return key;
	}

	/* Writes: on the in-memory tables; a value is stored as the row's JSON as given. */
	LookupResult set_rows(const Session &, const RowKey *keys, const std::string_view *values, size_t count,
						  const SetOptions &options, SetOutcome &outcome) override
	{
		outcome = SetOutcome();
		for (size_t i = 0; i < count; i++) {
			if (LookupResult refused = check_write(keys[i]); refused.status != LookupResult::Status::Ok)
				return refused;
		}
		bool all_absent = true;
		for (size_t i = 0; i < count; i++)
			all_absent = all_absent && find(keys[i]) == nullptr;
		if (count > 1 && options.condition == SetOptions::Condition::IfAbsent && !all_absent)
			return LookupResult::ok();
		outcome.written = true;
		for (size_t i = 0; i < count; i++) {
			const Row *old = find(keys[i]);
			if (options.get_old && old != nullptr)
				outcome.old_value = old->json;
			if ((options.condition == SetOptions::Condition::IfAbsent && old != nullptr) ||
				(options.condition == SetOptions::Condition::IfPresent && old == nullptr)) {
				outcome.written = false;
				continue;
			}
			tables[std::string(split(keys[i]).prefix)][split(keys[i]).id] = Row{std::string(values[i]), {}};
			writes++;
		}
		return LookupResult::ok();
	}

	LookupResult delete_rows(const Session &, const RowKey *keys, size_t count, int64_t *deleted) override
	{
		*deleted = 0;
		for (size_t i = 0; i < count; i++) {
			auto table = tables.find(split(keys[i]).prefix);
			if (table != tables.end())
				*deleted += int64_t(table->second.erase(split(keys[i]).id));
		}
		writes++;
		return LookupResult::ok();
	}

	LookupResult set_columns(const Session &, const RowKey &key, const std::string_view *columns,
							 const std::string_view *values, size_t count, int64_t *added) override
	{
		if (LookupResult refused = check_write(key); refused.status != LookupResult::Status::Ok)
			return refused;
		auto &rows = tables[std::string(split(key).prefix)];
		bool inserted = rows.find(split(key).id) == rows.end();
		Row &row = rows[split(key).id];
		for (size_t i = 0; i < count; i++)
			set_column(row, columns[i], std::string(values[i]));
		*added = inserted ? int64_t(count) : 0;
		writes++;
		return LookupResult::ok();
	}

	LookupResult clear_columns(const Session &, const RowKey &key, const std::string_view *columns, size_t count,
							   int64_t *removed) override
	{
		if (LookupResult refused = check_write(key); refused.status != LookupResult::Status::Ok)
			return refused;
		*removed = 0;
		auto table = tables.find(split(key).prefix);
		if (table == tables.end() || table->second.find(split(key).id) == table->second.end())
			return LookupResult::ok();
		for (auto &column : table->second[split(key).id].columns) {
			for (size_t i = 0; i < count; i++) {
				if (column.first == columns[i] && column.second) {
					column.second.reset();
					++*removed;
				}
			}
		}
		writes++;
		return LookupResult::ok();
	}

	LookupResult increment_column(const Session &, const RowKey &key, std::string_view column,
								  std::string_view increment, std::string *result) override
	{
		if (LookupResult refused = check_write(key); refused.status != LookupResult::Status::Ok)
			return refused;
		Row &row = tables[std::string(split(key).prefix)][split(key).id];
		double value = 0;
		for (const auto &c : row.columns)
			if (c.first == column && c.second)
				value = std::stod(*c.second);
		value += std::stod(std::string(increment));
		char text[64];
		snprintf(text, sizeof(text), "%.17g", value);
		set_column(row, column, text);
		*result = text;
		writes++;
		return LookupResult::ok();
	}

	LookupResult row_version(const Session &, const RowKey &key, std::string *version) override
	{
		*version = version_in(tables, key);
		return LookupResult::ok();
	}

	void begin_batch() override
	{
		batches++;
		in_batch = true;
		writes_before_batch = writes;
		tables_before_batch = tables;
	}
	LookupResult end_batch(bool commit) override
	{
		in_batch = false;
		if (!commit) {
			tables = tables_before_batch;
			writes = writes_before_batch;
			rollbacks++;
		}
		return LookupResult::ok();
	}
	/* BeforeCommit reads the rows as committed, the batch's own writes aside: as they were when
	 * the batch began, with what commit_during_batch (another client) changes meanwhile. */
	LookupResult check_versions(const Session &, const RowKey *keys, const std::string *versions, size_t count,
								WatchCheck when, bool *unchanged) override
	{
		watch_checks.push_back(when);
		if (when == WatchCheck::BeforeCommit && commit_during_batch) {
			commit_during_batch(tables_before_batch);
			commit_during_batch = nullptr;
		}
		*unchanged = true;
		for (size_t i = 0; i < count; i++)
			*unchanged = *unchanged &&
				version_in(when == WatchCheck::BeforeCommit ? tables_before_batch : tables, keys[i]) == versions[i];
		return LookupResult::ok();
	}
	std::vector<WatchCheck> watch_checks; /* what EXEC asked, in order */
	std::function<void(Tables &committed)> commit_during_batch;

	uint64_t count_keys(const Session &) override { return key_count; }
	/* Roles (by id) with pg_read_all_stats's privileges. */
	std::set<uint64_t> all_stats_readers;
	bool reads_all_stats(const Session &session) override
	{
		return session.role && all_stats_readers.count(session.role->id) != 0;
	}

	/* Roles that read all stats (pg_read_all_stats), and (member, role) memberships. */
	std::set<uint64_t> stats_readers;
	std::set<std::pair<uint64_t, uint64_t>> memberships;
	bool sees_activity_of(const Session &session, uint64_t role) override
	{
		return session.role && (stats_readers.count(session.role->id) > 0 ||
								memberships.count({session.role->id, role}) > 0);
	}

	void fill_info(InfoStats &stats) override { stats = info; }

	int64_t now_microseconds() override { return clock_microseconds; }
	int64_t clock_microseconds = 1764500000123456; /* 2025-11-30 10:53:20.123456 UTC */
	int64_t get_rows_cost_us = 0; /* how far each get_rows moves the clock: a slow request */

	int scan_calls = 0;
	int batches = 0;
	bool in_batch = false;
	int writes = 0;
	int rollbacks = 0;
	bool replica = false; /* writes answer ReadOnly */
	int writes_before_batch = 0;
	Tables tables_before_batch;
	unsigned char secret_seed = 7; /* another value: a restarted server */

private:
	LookupResult check_write(const RowKey &key) const
	{
		std::string_view prefix = split(key).prefix;
		if (tables.find(prefix) != tables.end() && !split(key).valid)
			return LookupResult::failed("invalid key '" + std::string(prefix) + ":" + std::string(key.id) +
										"': not a key of table " + std::string(prefix));
		if (replica)
			return LookupResult::read_only();
		if (tables.find(prefix) == tables.end())
			return LookupResult::failed("no enabled table has the RESP prefix \"" + std::string(prefix) + "\"");
		return check(prefix);
	}

	static void set_column(Row &row, std::string_view column, std::string value)
	{
		for (auto &c : row.columns) {
			if (c.first == column) {
				c.second = std::move(value);
				return;
			}
		}
		row.columns.emplace_back(std::string(column), std::move(value));
	}

	bool refuses(std::string_view prefix) const
	{
		return throwing_prefixes.count(prefix) || forbidden_prefixes.count(prefix) || failing_prefixes.count(prefix) ||
			   busy_prefixes.count(prefix);
	}

	LookupResult check(std::string_view prefix) const
	{
		if (throwing_prefixes.count(prefix))
			throw std::runtime_error("could not read table \"throws\"");
		if (forbidden_prefixes.count(prefix))
			return LookupResult::no_permission("permission denied for table " + std::string(prefix));
		if (failing_prefixes.count(prefix))
			return LookupResult::failed("could not read table " + std::string(prefix));
		if (busy_prefixes.count(prefix))
			return LookupResult::busy("table \"" + std::string(prefix) + "\" is locked by another transaction");
		return LookupResult::ok();
	}

	/* A SCAN position in table `number`, after the id (the id's 8 bytes, as the store's). */
	static ScanPosition scan_position(uint64_t number, std::optional<int64_t> after)
	{
		ScanPosition position;
		position.table = number;
		position.started = after.has_value();
		if (after) {
			std::memcpy(position.after_key, &*after, sizeof *after);
			position.after_length = sizeof *after;
		}
		return position;
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
	static std::string version_in(const Tables &in, const RowKey &key)
	{
		const Row *row = find_in(in, key);
		return row == nullptr ? "absent" : row->json + "|" + std::to_string(row->columns.size());
	}
};

} // namespace resp_test
