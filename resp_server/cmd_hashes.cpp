/*
 * cmd_hashes.cpp — the hash commands, as Redis's t_hash.c: HGET, HMGET, HEXISTS, HSTRLEN,
 * HGETALL, HKEYS, HVALS and HLEN read the columns of the row a key names, as text; NULL
 * columns are absent fields.
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

/* Looks up every non-NULL column of the row `key_text` names into scratch.fields. */
bool lookup_all_columns(CommandContext &c, std::string_view key_text)
{
	c.scratch.fields.begin();
	std::optional<RowKey> key = parse_row_key(key_text);
	return !key || lookup_succeeded(c, c.data.get_all_columns(c.session, *key, c.scratch.fields));
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

void hexists_command(CommandContext &c)
{
	if (lookup_columns(c, c.arg(1), &c.request.argv[2], 1))
		c.reply.integer(c.scratch.values.found(0) ? 1 : 0);
}

void hstrlen_command(CommandContext &c)
{
	if (lookup_columns(c, c.arg(1), &c.request.argv[2], 1))
		c.reply.integer(c.scratch.values.found(0) ? int64_t(c.scratch.values.get(0).size()) : 0);
}

void hgetall_command(CommandContext &c)
{
	if (!lookup_all_columns(c, c.arg(1)))
		return;
	const FieldCollector &fields = c.scratch.fields;
	c.reply.map(fields.count());
	for (size_t i = 0; i < fields.count(); i++) {
		c.reply.bulk(fields.column(i));
		c.reply.bulk(fields.value(i));
	}
}

void hkeys_command(CommandContext &c)
{
	if (!lookup_all_columns(c, c.arg(1)))
		return;
	const FieldCollector &fields = c.scratch.fields;
	c.reply.array(fields.count());
	for (size_t i = 0; i < fields.count(); i++)
		c.reply.bulk(fields.column(i));
}

void hvals_command(CommandContext &c)
{
	if (!lookup_all_columns(c, c.arg(1)))
		return;
	const FieldCollector &fields = c.scratch.fields;
	c.reply.array(fields.count());
	for (size_t i = 0; i < fields.count(); i++)
		c.reply.bulk(fields.value(i));
}

void hlen_command(CommandContext &c)
{
	if (lookup_all_columns(c, c.arg(1)))
		c.reply.integer(int64_t(c.scratch.fields.count()));
}

} // namespace local_cache::resp
