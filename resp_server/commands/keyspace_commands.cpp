/*
 * keyspace_commands.cpp — commands about keys rather than their values, as Redis's db.c, expire.c
 * and object.c: SCAN, KEYS, DEL, UNLINK, TYPE, TTL, PTTL and MEMORY USAGE. A key that names a row is a
 * string (GET answers its JSON; the hash commands read the same row by column), never expires,
 * and is only ever removed by the table's writes. The keyspace is every row of the enabled
 * tables the connection's role may read.
 */
#include "resp_server/commands/command_context.h"
#include "resp_server/commands/scan_cursor.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace local_cache::resp {

namespace {

/* Whether the row `key` names exists; false also when the command must stop (reply written). */
bool lookup_key(CommandContext &c, bool *exists)
{
	if (!lookup_rows(c, &c.request.argv[1], 1))
		return false;
	*exists = c.scratch.values.found(0);
	return true;
}

/* SCAN's COUNT when none is given (Redis's), and the most keys one call examines whatever
 * COUNT says: a SCAN is one short transaction, and its reply is bounded. */
constexpr size_t kScanDefaultCount = 10;
constexpr size_t kScanMaxCount = 10000;
/* KEYS answers from one snapshot, in one call: it refuses keyspaces larger than this. */
constexpr size_t kKeysMaxKeys = 100000;

/* The literal text every key matching `pattern` starts with: tables whose keys cannot start so
 * are not read. */
std::string_view literal_start(std::string_view pattern)
{
	size_t special = pattern.find_first_of("*?[\\");
	return pattern.substr(0, special);
}

/* Where SCAN's cursor argument says to go on from; false: not a cursor this server gave this
 * role (then no truncated form of the one it last gave this connection either). */
bool parse_cursor(CommandContext &c, std::string_view text, ScanPosition *position)
{
	if (!text.empty() && text.size() <= 20 && text.find_first_not_of('0') == std::string_view::npos) {
		*position = ScanPosition(); /* 0, however many digits, as Redis reads it */
		return true;
	}
	ScanCursorKey key = c.data.rows.scan_cursor_key(c.session);
	if (decode_scan_cursor(key, text, position))
		return true;
	return is_truncated_cursor(text) && !c.session.last_scan_cursor.empty() &&
		decode_scan_cursor(key, c.session.last_scan_cursor, position);
}

/* Scans from `position` into scratch.scanned; false when the command must stop. */
bool scan_into_scratch(CommandContext &c, ScanPosition &position, size_t count, std::string_view pattern)
{
	std::string_view match_all = pattern == "*" ? std::string_view() : pattern;
	c.scratch.scanned.begin(match_all);
	return lookup_succeeded(c, c.data.rows.scan_keys(c.session, position, count, literal_start(pattern),
												 c.scratch.scanned));
}

void reply_scanned_keys(CommandContext &c)
{
	const KeyCollector &keys = c.scratch.scanned;
	c.reply.array(keys.count());
	for (size_t i = 0; i < keys.count(); i++)
		c.reply.bulk(keys.get(i));
}

/* Redis's per-key bookkeeping for a string (dict entry, key and value objects), which MEMORY
 * USAGE adds to the value as Redis does. */
constexpr int64_t kKeyOverheadBytes = 56;

} // namespace

/*
 * SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]: the keys of one table after another,
 * each in key order. Every key present for the whole iteration is returned exactly once; MATCH
 * filters the keys a call examined, so a call may return none and a cursor other than 0. The
 * cursor carries the position, signed (scan_cursor.h): it works on any connection of the same
 * role for as long as the server runs, whatever other clients do.
 */
void scan_command(CommandContext &c)
{
	ScanPosition position;
	if (!parse_cursor(c, c.arg(1), &position)) {
		c.reply.error("invalid cursor");
		return;
	}
	std::string_view pattern = "*";
	std::string_view type;
	size_t count = kScanDefaultCount;
	for (size_t i = 2; i < c.argc(); i += 2) {
		if (i + 1 >= c.argc()) {
			c.reply.error("syntax error");
			return;
		}
		std::string_view option = c.arg(i);
		if (equals_ignore_case(option, "match")) {
			pattern = c.arg(i + 1);
		} else if (equals_ignore_case(option, "count")) {
			int64_t value = 0;
			if (!parse_canonical_int64(c.arg(i + 1), &value)) {
				c.reply.error("value is not an integer or out of range");
				return;
			}
			if (value < 1) {
				c.reply.error("syntax error");
				return;
			}
			count = std::min(size_t(value), kScanMaxCount);
		} else if (equals_ignore_case(option, "type")) {
			type = c.arg(i + 1);
		} else {
			c.reply.error("syntax error");
			return;
		}
	}
	/* Every key is a string: for any other type the iteration is over at once. */
	bool strings = type.empty() || equals_ignore_case(type, "string");
	if (strings && !scan_into_scratch(c, position, count, pattern))
		return;
	std::string &cursor = c.session.last_scan_cursor;
	cursor.clear();
	if (strings && !position.finished)
		encode_scan_cursor(c.data.rows.scan_cursor_key(c.session), position, cursor);
	c.reply.array(2);
	c.reply.bulk(cursor.empty() ? std::string_view("0") : std::string_view(cursor));
	if (strings)
		reply_scanned_keys(c);
	else
		c.reply.array(0);
}

/* KEYS pattern: every matching key, from one snapshot; refused past kKeysMaxKeys keys. */
void keys_command(CommandContext &c)
{
	ScanPosition position;
	if (!scan_into_scratch(c, position, kKeysMaxKeys + 1, c.arg(1)))
		return;
	if (!position.finished) {
		std::string &text = c.scratch.text;
		text.assign("KEYS would examine more than ");
		append_number(text, kKeysMaxKeys);
		text.append(" keys; use SCAN");
		c.reply.error(text);
		return;
	}
	reply_scanned_keys(c);
}

/* DEL and UNLINK: deletes the rows; keys that name no row count for nothing, as in Redis. */
void del_command(CommandContext &c)
{
	std::vector<RowKey> &keys = c.scratch.keys;
	keys.clear();
	for (size_t i = 1; i < c.argc(); i++)
		if (std::optional<RowKey> key = parse_row_key(c.arg(i)))
			keys.push_back(*key);
	int64_t deleted = 0;
	if (keys.empty() || lookup_succeeded(c, c.data.writes.delete_rows(c.session, keys.data(), keys.size(), &deleted)))
		c.reply.integer(deleted);
}

void type_command(CommandContext &c)
{
	bool exists = false;
	if (lookup_key(c, &exists))
		c.reply.simple_string(exists ? "string" : "none");
}

/* TTL and PTTL: -1 for a key that exists (rows do not expire), -2 for one that does not. */
void ttl_command(CommandContext &c)
{
	bool exists = false;
	if (lookup_key(c, &exists))
		c.reply.integer(exists ? -1 : -2);
}

/* MEMORY USAGE key [SAMPLES count]: the bytes of the row's JSON and key plus Redis's per-key
 * overhead, so that redis-cli --memkeys ranks rows by size; nil for a missing key. */
void memory_usage_command(CommandContext &c)
{
	if (c.argc() != 3 && c.argc() != 5) {
		c.reply.error("syntax error");
		return;
	}
	if (c.argc() == 5) {
		int64_t samples = 0;
		if (!equals_ignore_case(c.arg(3), "samples")) {
			c.reply.error("syntax error");
			return;
		}
		if (!parse_canonical_int64(c.arg(4), &samples) || samples < 0) {
			c.reply.error("value is out of range, must be positive");
			return;
		}
	}
	if (!lookup_rows(c, &c.request.argv[2], 1))
		return;
	if (!c.scratch.values.found(0)) {
		c.reply.null();
		return;
	}
	c.reply.integer(int64_t(c.scratch.values.get(0).size() + c.arg(2).size()) + kKeyOverheadBytes);
}

} // namespace local_cache::resp
