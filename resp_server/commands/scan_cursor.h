/*
 * scan_cursor.h — SCAN cursors that carry their position, as Redis's do: nothing is kept on the
 * server, so no other client's SCANs can make a cursor invalid, and a cursor works on any
 * connection of any worker for as long as the server runs.
 *
 * A cursor is the position (ScanPosition: the table, and the bytes of the last key examined)
 * followed by an HMAC-SHA-256 (truncated to 128 bits) over the position, the role and the
 * database, keyed with a random secret the server makes at start. So a cursor cannot be forged
 * or edited, does not continue for another role (nor in another database or after a restart),
 * and tells its holder nothing it was not shown: the last key is one its role could read.
 *
 * The text, for clients that keep the cursor as a string (node-redis v5, ioredis, Jedis) and
 * those that turn it into an integer and back (redis-py: Python's int has no size limit):
 *
 *   "1" (the format)  then each two bytes of  flags(1) table(8, big-endian) key(0..240) [pad(1)] mac(16)
 *   as five decimal digits ("00000" to "65535"), big-endian
 *
 * flags: bit 0 the position is after the key (ScanPosition::started), bit 1 a zero pad byte
 * makes the length even. Only digits, never a leading zero, at least 66 and at most 666 of them
 * (below the 4300 digits Python converts). Any other text, a group above 65535, or a MAC that
 * does not match is not a cursor. No PostgreSQL header: the server supplies the key material.
 */
#pragma once

#include "resp_server/commands/data_source.h"

#include <string>
#include <string_view>

namespace local_cache::resp {

/* Appends the cursor of `position` (not finished: that cursor is "0") to `out`. */
void encode_scan_cursor(const ScanCursorKey &key, const ScanPosition &position, std::string &out);

/* The position `text` encodes, if it is a cursor made with `key`; false otherwise. */
bool decode_scan_cursor(const ScanCursorKey &key, std::string_view text, ScanPosition *position);

/*
 * Whether `text` is what a client that holds cursors in a fixed-size number makes of a long
 * one: redis-cli (strtoull saturates at 2^64 - 1) and node-redis v4 (a JavaScript number:
 * "1.2e+99", "Infinity"). SCAN continues such a client's walk from the cursor it last gave the
 * same connection, which is where those clients go on.
 */
bool is_truncated_cursor(std::string_view text);

} // namespace local_cache::resp
