/*
 * cmd_strings.cpp — the string commands, as Redis's t_string.c: GET, MGET and STRLEN, with
 * EXISTS and DBSIZE, which ask about the same keys. A key <prefix>:<id> names one row, whose value is the
 * row's JSON. Also what every data command shares: the key format (parse_row_key) and the
 * answers to a lookup.
 */
#include "command_context.h"

#include <optional>
#include <vector>

namespace local_cache::resp {

std::optional<RowKey> parse_row_key(std::string_view key)
{
	size_t colon = key.rfind(':');
	if (colon == std::string_view::npos || colon == 0)
		return std::nullopt;
	int64_t id = 0;
	if (!parse_canonical_int64(key.substr(colon + 1), &id))
		return std::nullopt;
	return RowKey{key.substr(0, colon), id};
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
	return lookup_succeeded(c, c.data.get_rows(c.session, s.keys.data(), s.keys.size(), s.values));
}

void get_command(CommandContext &c)
{
	if (lookup_rows(c, &c.request.argv[1], 1))
		reply_collected_value(c, 0);
}

void mget_command(CommandContext &c)
{
	size_t count = c.argc() - 1;
	if (!lookup_rows(c, &c.request.argv[1], count))
		return;
	c.reply.array(count);
	for (size_t i = 0; i < count; i++)
		reply_collected_value(c, i);
}

void strlen_command(CommandContext &c)
{
	if (lookup_rows(c, &c.request.argv[1], 1))
		c.reply.integer(c.scratch.values.found(0) ? int64_t(c.scratch.values.get(0).size()) : 0);
}

void exists_command(CommandContext &c)
{
	size_t count = c.argc() - 1;
	if (!lookup_rows(c, &c.request.argv[1], count))
		return;
	int64_t existing = 0;
	for (size_t i = 0; i < count; i++)
		existing += c.scratch.values.found(i) ? 1 : 0;
	c.reply.integer(existing);
}

void dbsize_command(CommandContext &c)
{
	c.reply.integer(int64_t(c.data.count_keys(c.session)));
}

} // namespace local_cache::resp
