/*
 * hash_commands.cpp — the hash commands, as Redis's t_hash.c: HGET, HMGET, HEXISTS, HSTRLEN,
 * HGETALL, HKEYS, HVALS and HLEN read the columns of the row a key names, as text; NULL
 * columns are absent fields. HSET, HMSET, HDEL, HINCRBY and HINCRBYFLOAT write them through
 * SQL (a value is the column's text; HDEL sets NULL).
 */
#include "resp_server/commands/command_context.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

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
	return lookup_succeeded(c, c.data.rows.get_columns(c.session, *key, columns, count, s.values));
}

/* Looks up every non-NULL column of the row `key_text` names into scratch.fields. */
bool lookup_all_columns(CommandContext &c, std::string_view key_text)
{
	c.scratch.fields.begin();
	std::optional<RowKey> key = parse_row_key(key_text);
	return !key || lookup_succeeded(c, c.data.rows.get_all_columns(c.session, *key, c.scratch.fields));
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

/* HSET and HMSET key column value [column value ...]: a missing row is inserted. */
void hset_command(CommandContext &c)
{
	if (c.argc() % 2 == 1) {
		c.scratch.text.assign("wrong number of arguments for '").append(c.command.full_name).append("' command");
		c.reply.error(c.scratch.text);
		return;
	}
	RowKey key;
	if (!parse_write_key(c, c.arg(1), &key))
		return;
	size_t count = (c.argc() - 2) / 2;
	std::vector<std::string_view> columns, values;
	for (size_t i = 0; i < count; i++) {
		columns.push_back(c.arg(2 + 2 * i));
		values.push_back(c.arg(3 + 2 * i));
	}
	int64_t added = 0;
	if (!lookup_succeeded(c, c.data.writes.set_columns(c.session, key, columns.data(), values.data(), count, &added)))
		return;
	if (c.command.full_name == "hmset")
		c.reply.ok();
	else
		c.reply.integer(added);
}

void hdel_command(CommandContext &c)
{
	RowKey key;
	if (!parse_write_key(c, c.arg(1), &key))
		return;
	int64_t removed = 0;
	if (lookup_succeeded(c, c.data.writes.clear_columns(c.session, key, &c.request.argv[2], c.argc() - 2, &removed)))
		c.reply.integer(removed);
}

/* HINCRBY (an integer increment, an integer reply) and HINCRBYFLOAT (a number, a bulk reply). */
void hincrby_command(CommandContext &c)
{
	bool floating = c.command.full_name == "hincrbyfloat";
	std::string_view increment = c.arg(3);
	int64_t integer = 0;
	if (!floating && !parse_canonical_int64(increment, &integer)) {
		c.reply.error("value is not an integer or out of range");
		return;
	}
	if (floating) {
		std::string text(increment);
		char *end = nullptr;
		double value = text.empty() ? 0 : strtod(text.c_str(), &end);
		if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
			c.reply.error("value is not a valid float");
			return;
		}
	}
	RowKey key;
	if (!parse_write_key(c, c.arg(1), &key))
		return;
	std::string result;
	if (!lookup_succeeded(c, c.data.writes.increment_column(c.session, key, c.arg(2), increment, &result)))
		return;
	int64_t value = 0;
	if (!floating && parse_canonical_int64(result, &value))
		c.reply.integer(value);
	else
		c.reply.bulk(result);
}

} // namespace local_cache::resp
