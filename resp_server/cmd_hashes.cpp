/*
 * cmd_hashes.cpp — the hash commands, as Redis's t_hash.c: HGET, HMGET and HGETALL read the
 * columns of the row a key names, as text; NULL columns are absent fields.
 */
#include "command_context.h"

#include <optional>

namespace local_cache::resp {

namespace {

/* Looks up `count` columns of the row `key_text` names into scratch.values. */
bool lookup_columns(CommandContext &c, std::string_view key_text, const std::string_view *columns,
					size_t count)
{
	CommandProcessor::Scratch &s = c.scratch;
	s.values.begin(count);
	std::optional<RowKey> key = parse_row_key(key_text);
	if (!key)
		return true;
	for (size_t i = 0; i < count; i++)
		s.values.map_next_index(i);
	return lookup_succeeded(c, c.data.get_columns(c.session, *key, columns, count, s.values));
}

} // namespace

void hget_command(CommandContext &c)
{
	if (lookup_columns(c, c.arg(1), &c.request.argv[2], 1))
		reply_collected_value(c, 0);
}

void hmget_command(CommandContext &c)
{
	size_t count = c.argc() - 2;
	if (!lookup_columns(c, c.arg(1), &c.request.argv[2], count))
		return;
	c.reply.array(count);
	for (size_t i = 0; i < count; i++)
		reply_collected_value(c, i);
}

void hgetall_command(CommandContext &c)
{
	FieldCollector &fields = c.scratch.fields;
	fields.begin();
	if (std::optional<RowKey> key = parse_row_key(c.arg(1))) {
		if (!lookup_succeeded(c, c.data.get_all_columns(c.session, *key, fields)))
			return;
	}
	c.reply.map(fields.count());
	for (size_t i = 0; i < fields.count(); i++) {
		c.reply.bulk(fields.column(i));
		c.reply.bulk(fields.value(i));
	}
}

} // namespace local_cache::resp
