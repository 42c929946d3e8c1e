/*
 * fake_reads.h — the command tests' RowReader and CacheHits over FakeTables: lookups that
 * answer in a scrambled order (to check that handlers do not trust it), SCAN a table at a time,
 * and a hit path that answers only when every key is a hit, as the PostgreSQL side does.
 */
#pragma once

#include "resp_server/protocol/reply.h"
#include "resp_server/tests/fake_tables.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace resp_test {

class FakeRowReader final : public RowReader {
public:
	explicit FakeRowReader(FakeTables &db) : db_(db) {}

	/* Answer in reverse key order (a cache answers hits first, fills later) and once with an
	 * index it was never given, to check that the handlers do not trust the order or the index. */
	bool scramble_answers = true;
	uint64_t key_count = 6;           /* what DBSIZE answers */
	int64_t get_rows_cost_us = 0;     /* how far each get_rows moves the clock: a slow request */
	unsigned char secret_seed = 7;    /* another value: a restarted server */

	/* What reached the fake. */
	int get_rows_calls = 0;
	int scan_calls = 0;
	std::vector<std::pair<std::string, std::string>> last_keys; /* prefix, id */

	LookupResult get_rows(const Session &session, const RowKey *keys, size_t count, ValueSink &sink) override
	{
		db_.note_role(session);
		get_rows_calls++;
		db_.clock_microseconds += get_rows_cost_us;
		last_keys.clear();
		for (size_t i = 0; i < count; i++)
			last_keys.emplace_back(std::string(keys[i].prefix), std::string(keys[i].id));
		for (size_t i = 0; i < count; i++) {
			if (LookupResult refused = db_.check(keys[i].prefix); refused.status != LookupResult::Status::Ok)
				return refused;
		}
		if (scramble_answers)
			sink.value(count + 5, "never asked for");
		for (size_t n = 0; n < count; n++) {
			size_t i = scramble_answers ? count - 1 - n : n;
			if (const FakeTables::Row *row = db_.find(keys[i]))
				sink.value(i, row->json);
		}
		return LookupResult::ok();
	}

	LookupResult get_columns(const Session &session, const RowKey &key, const std::string_view *columns,
							 size_t count, ValueSink &sink) override
	{
		db_.note_role(session);
		if (LookupResult refused = db_.check(key.prefix); refused.status != LookupResult::Status::Ok)
			return refused;
		const FakeTables::Row *row = db_.find(key);
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

	LookupResult get_all_columns(const Session &session, const RowKey &key, FieldSink &sink) override
	{
		db_.note_role(session);
		if (LookupResult refused = db_.check(key.prefix); refused.status != LookupResult::Status::Ok)
			return refused;
		if (const FakeTables::Row *row = db_.find(key)) {
			for (const auto &column : row->columns) {
				if (column.second)
					sink.field(column.first, *column.second);
			}
		}
		return LookupResult::ok();
	}

	/* Tables in map order, numbered from 1; tables the fake refuses are skipped, as unreadable. */
	LookupResult scan_keys(const Session &session, ScanPosition &position, size_t count, std::string_view key_start,
						   KeySink &sink) override
	{
		db_.note_role(session);
		scan_calls++;
		size_t n = 0;
		uint64_t number = 0;
		for (const auto &[prefix, rows] : db_.tables) {
			number++;
			if (number < position.table)
				continue;
			if (n == count) {
				position = scan_position(number, std::nullopt);
				return LookupResult::ok();
			}
			std::string head = prefix + ":";
			size_t common = std::min(head.size(), key_start.size());
			if (head.compare(0, common, key_start, 0, common) != 0 || db_.refuses(prefix))
				continue;
			bool continuing = number == position.table && position.started;
			int64_t after = 0;
			if (continuing)
				std::memcpy(&after, position.after_key, sizeof after);
			for (auto row = continuing ? rows.upper_bound(after) : rows.begin(); row != rows.end() && n < count;
				 ++row, n++) {
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

	uint64_t count_keys(const Session &session) override
	{
		db_.note_role(session);
		return key_count;
	}

private:
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

	FakeTables &db_;
};

class FakeCacheHits final : public CacheHits {
public:
	explicit FakeCacheHits(FakeTables &db) : db_(db) {}

	/* Answer requests whose keys are all "hits" (rows, or keys of no table, or that do not
	 * parse) in place of get_rows, as the PostgreSQL side does; off: never. */
	bool reply_from_hits = false;
	int reply_hits_answers = 0;

	bool reply_hits(const Session &session, const std::string_view *keys, size_t count,
					local_cache::resp::ReplyWriter &reply) override
	{
		if (!reply_from_hits)
			return false;
		db_.note_role(session);
		for (size_t i = 0; i < count; i++) {
			std::optional<RowKey> key = parse_row_key(keys[i]);
			if (key && db_.tables.count(key->prefix) &&
				(db_.refuses(key->prefix) || (FakeTables::split(*key).valid && db_.find(*key) == nullptr)))
				return false; /* a miss, or what only get_rows answers (its errors) */
		}
		for (size_t i = 0; i < count; i++) {
			std::optional<RowKey> key = parse_row_key(keys[i]);
			const FakeTables::Row *row = key ? db_.find(*key) : nullptr;
			if (row != nullptr)
				reply.bulk(row->json);
			else
				reply.null();
		}
		reply_hits_answers++;
		return true;
	}

private:
	FakeTables &db_;
};

} // namespace resp_test
