/*
 * row_access.cpp — what every data command (strings, hashes, keyspace) shares: the key format
 * <prefix>:<id> (parse_row_key), reading rows into the scratch collector, and the replies to a
 * lookup or write that failed.
 */
#include "resp_server/commands/command_context.h"

#include <optional>
#include <vector>

namespace local_cache::resp {

std::optional<RowKey> parse_row_key(std::string_view key)
{
	size_t colon = key.find(':');
	if (colon == std::string_view::npos || colon == 0)
		return std::nullopt;
	return RowKey{key.substr(0, colon), key.substr(colon + 1)};
}

/* Answers a failed lookup; returns false when the command must stop. */
bool lookup_succeeded(CommandContext &c, const LookupResult &result)
{
	switch (result.status) {
	case LookupResult::Status::Ok:
		return true;
	case LookupResult::Status::NoPermission:
		c.reply.error_with_code("NOPERM", result.message);
		return false;
	case LookupResult::Status::Busy:
		if (c.session.lock_wait_expired)
			c.reply.error_with_code("BUSY", result.message);
		else
			c.session.retry_later = true;
		return false;
	case LookupResult::Status::Failed:
		c.reply.error(result.message);
		return false;
	case LookupResult::Status::ReadOnly:
		c.reply.error_with_code("READONLY", result.message);
		return false;
	}
	return false;
}

void reply_collected_value(CommandContext &c, size_t position)
{
	if (c.scratch.values.found(position))
		c.reply.bulk(c.scratch.values.get(position));
	else
		c.reply.null();
}

bool lookup_rows(CommandContext &c, const std::string_view *keys, size_t count)
{
	CommandProcessor::Scratch &s = c.scratch;
	s.values.begin(count);
	release_if_large(s.keys); /* do not keep a huge MGET's memory */
	s.keys.clear();
	for (size_t i = 0; i < count; i++) {
		if (std::optional<RowKey> key = parse_row_key(keys[i])) {
			s.keys.push_back(*key);
			s.values.map_next_index(i);
		}
	}
	if (s.keys.empty())
		return true;
	return lookup_succeeded(c, c.data.rows.get_rows(c.session, s.keys.data(), s.keys.size(), s.values));
}

bool parse_write_key(CommandContext &c, std::string_view text, RowKey *key)
{
	if (std::optional<RowKey> parsed = parse_row_key(text)) {
		*key = *parsed;
		return true;
	}
	c.scratch.text.assign("invalid key '").append(c_string_prefix(text, 128));
	c.scratch.text.append("': a row's key is <prefix>:<id>");
	c.reply.error(c.scratch.text);
	return false;
}

} // namespace local_cache::resp
