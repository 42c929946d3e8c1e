/*
 * cmd_keyspace.cpp — commands about keys rather than their values, as Redis's db.c, expire.c
 * and object.c: TYPE, TTL, PTTL and MEMORY USAGE. A key that names a row is a string (GET
 * answers its JSON; the hash commands read the same row by column), never expires, and is
 * only ever removed by the table's writes.
 */
#include "command_context.h"

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

/* Redis's per-key bookkeeping for a string (dict entry, key and value objects), which MEMORY
 * USAGE adds to the value as Redis does. */
constexpr int64_t kKeyOverheadBytes = 56;

} // namespace

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
