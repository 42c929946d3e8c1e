/*
 * string_commands.cpp — the string commands, as Redis's t_string.c: GET, MGET and STRLEN, with
 * EXISTS and DBSIZE, which ask about the same keys; SET, SETNX, GETSET, MSET and MSETNX, which
 * write the rows as JSON objects through SQL. A key <prefix>:<id> names one row, whose value is the
 * row's JSON (row_access.cpp reads and parses those keys).
 */
#include "resp_server/commands/command_context.h"

#include <optional>
#include <vector>

namespace local_cache::resp {

void get_command(CommandContext &c)
{
	if (c.data.hits.reply_hits(c.session, &c.request.argv[1], 1, c.reply))
		return;
	if (lookup_rows(c, &c.request.argv[1], 1))
		reply_collected_value(c, 0);
}

void mget_command(CommandContext &c)
{
	size_t count = c.argc() - 1;
	size_t reply_start = c.reply.buffer().size();
	c.reply.array(count);
	if (c.data.hits.reply_hits(c.session, &c.request.argv[1], count, c.reply))
		return;
	c.reply.buffer().truncate(reply_start);
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

namespace {

/* Writes the rows; false when the command must stop (reply written). */
bool write_rows(CommandContext &c, const std::string_view *pairs, size_t count, const SetOptions &options,
				SetOutcome &outcome)
{
	std::vector<RowKey> &keys = c.scratch.keys;
	std::vector<std::string_view> values;
	keys.clear();
	for (size_t i = 0; i < count; i++) {
		RowKey key;
		if (!parse_write_key(c, pairs[2 * i], &key))
			return false;
		keys.push_back(key);
		values.push_back(pairs[2 * i + 1]);
	}
	return lookup_succeeded(c, c.data.writes.set_rows(c.session, keys.data(), values.data(), count, options, outcome));
}

} // namespace

/* SET key json [NX|XX] [GET]; EX, PX, EXAT, PXAT and KEEPTTL are refused: rows do not expire. */
void set_command(CommandContext &c)
{
	SetOptions options;
	for (size_t i = 3; i < c.argc(); i++) {
		std::string_view option = c.arg(i);
		bool nx = equals_ignore_case(option, "nx"), xx = equals_ignore_case(option, "xx");
		if ((nx || xx) && options.condition == SetOptions::Condition::Always) {
			options.condition = nx ? SetOptions::Condition::IfAbsent : SetOptions::Condition::IfPresent;
		} else if (equals_ignore_case(option, "get") && !options.get_old) {
			options.get_old = true;
		} else if (equals_ignore_case(option, "keepttl") ||
				   ((equals_ignore_case(option, "ex") || equals_ignore_case(option, "px") ||
					 equals_ignore_case(option, "exat") || equals_ignore_case(option, "pxat")) &&
					i + 1 < c.argc())) {
			c.scratch.text.assign("rows do not expire: ");
			for (char ch : c_string_prefix(option, 16))
				c.scratch.text += ascii_upper(ch);
			c.scratch.text.append(" is not supported");
			c.reply.error(c.scratch.text);
			return;
		} else {
			c.reply.error("syntax error");
			return;
		}
	}
	SetOutcome outcome;
	if (!write_rows(c, &c.request.argv[1], 1, options, outcome))
		return;
	if (options.get_old) {
		if (outcome.old_value)
			c.reply.bulk(*outcome.old_value);
		else
			c.reply.null();
	} else if (outcome.written) {
		c.reply.ok();
	} else {
		c.reply.null();
	}
}

void setnx_command(CommandContext &c)
{
	SetOptions options;
	options.condition = SetOptions::Condition::IfAbsent;
	SetOutcome outcome;
	if (write_rows(c, &c.request.argv[1], 1, options, outcome))
		c.reply.integer(outcome.written ? 1 : 0);
}

void getset_command(CommandContext &c)
{
	SetOptions options;
	options.get_old = true;
	SetOutcome outcome;
	if (!write_rows(c, &c.request.argv[1], 1, options, outcome))
		return;
	if (outcome.old_value)
		c.reply.bulk(*outcome.old_value);
	else
		c.reply.null();
}

/* MSET and MSETNX: every row in one transaction, all or nothing. */
void mset_command(CommandContext &c)
{
	if (c.argc() % 2 == 0) {
		c.scratch.text.assign("wrong number of arguments for '").append(c.command.full_name).append("' command");
		c.reply.error(c.scratch.text);
		return;
	}
	bool nx = c.command.full_name == "msetnx";
	SetOptions options;
	if (nx)
		options.condition = SetOptions::Condition::IfAbsent;
	SetOutcome outcome;
	if (!write_rows(c, &c.request.argv[1], (c.argc() - 1) / 2, options, outcome))
		return;
	if (nx)
		c.reply.integer(outcome.written ? 1 : 0);
	else
		c.reply.ok();
}

void dbsize_command(CommandContext &c)
{
	c.reply.integer(int64_t(c.data.rows.count_keys(c.session)));
}

} // namespace local_cache::resp
