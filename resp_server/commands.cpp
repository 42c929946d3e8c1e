/*
 * commands.cpp — the command table, its lookup, the dispatcher and one handler per command.
 *
 * Handlers read their arguments from the request, ask the DataSource for data, and write one
 * reply. Data handlers do all their lookups before writing anything, and copy what the
 * DataSource hands them into per-worker scratch buffers that keep their capacity between
 * requests, so a cache hit costs no allocation once the worker has warmed up.
 */
#include "command_context.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace local_cache::resp {

namespace {

/* Redis's bytesToHuman: 1023B, 1.00K, 12.50M ... */
void append_human_bytes(std::string &out, uint64_t bytes)
{
	static const char units[] = {'K', 'M', 'G', 'T', 'P'};
	if (bytes < 1024) {
		append_number(out, bytes);
		out += 'B';
		return;
	}
	double value = double(bytes) / 1024;
	size_t unit = 0;
	while (value >= 1024 && unit + 1 < sizeof(units)) {
		value /= 1024;
		unit++;
	}
	char text[64];
	int length = snprintf(text, sizeof(text), "%.2f%c", value, units[unit]);
	out.append(text, size_t(length));
}

/* Every command flagged CMD_WRITE: the cache is filled from the tables, never written. */
void refuse_write_command(CommandContext &c)
{
	c.reply.error(kReadOnlyError);
}

/* CLIENT HELP, COMMAND HELP, CONFIG HELP: the container's subcommands and their summaries. */
void help_command(CommandContext &c)
{
	const CommandSpec *container = find_command(c.arg(0));
	if (container == nullptr) {
		c.reply.array(0);
		return;
	}
	std::string &line = c.scratch.text;
	c.reply.array(1 + 2 * container->subcommand_count);
	line.clear();
	for (char ch : container->name())
		line += ascii_upper(ch);
	line.append(" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
	c.reply.simple_string(line);
	for (size_t i = 0; i < container->subcommand_count; i++) {
		const CommandSpec &sub = container->subcommands[i];
		line.clear();
		for (char ch : sub.name())
			line += ascii_upper(ch);
		c.reply.simple_string(line);
		line.assign("    ").append(sub.summary);
		c.reply.simple_string(line);
	}
}

/* ---- COMMAND ---- */

struct FlagName {
	uint32_t flag;
	std::string_view name;
};
constexpr FlagName kFlagNames[] = {
	{CMD_WRITE, "write"}, {CMD_READONLY, "readonly"}, {CMD_ADMIN, "admin"},
	{CMD_LOADING, "loading"}, {CMD_STALE, "stale"}, {CMD_FAST, "fast"},
	{CMD_NO_AUTH, "no_auth"},
};

/* ACL categories as Redis derives them: from the flags and the group. */
size_t command_categories(const CommandSpec &command, std::string_view *out)
{
	size_t count = 0;
	if (command.flags & CMD_WRITE)
		out[count++] = "@write";
	if (command.flags & CMD_READONLY)
		out[count++] = "@read";
	if (command.flags & CMD_ADMIN) {
		out[count++] = "@admin";
		out[count++] = "@dangerous";
	}
	out[count++] = (command.flags & CMD_FAST) ? "@fast" : "@slow";
	if (command.group == "string")
		out[count++] = "@string";
	else if (command.group == "hash")
		out[count++] = "@hash";
	else if (command.group == "generic")
		out[count++] = "@keyspace";
	else if (command.group == "connection")
		out[count++] = "@connection";
	return count;
}

void reply_command_info(ReplyWriter &reply, const CommandSpec *command)
{
	if (command == nullptr) {
		reply.null();
		return;
	}
	reply.array(10);
	reply.bulk(command->full_name);
	reply.integer(command->arity);

	size_t flag_count = 0;
	for (const FlagName &flag : kFlagNames)
		flag_count += (command->flags & flag.flag) ? 1 : 0;
	reply.set(flag_count);
	for (const FlagName &flag : kFlagNames) {
		if (command->flags & flag.flag)
			reply.simple_string(flag.name);
	}

	reply.integer(command->first_key);
	reply.integer(command->last_key);
	reply.integer(command->key_step);

	std::string_view categories[8];
	size_t category_count = command_categories(*command, categories);
	reply.set(category_count);
	for (size_t i = 0; i < category_count; i++)
		reply.simple_string(categories[i]);

	reply.set(0); /* tips */
	reply.set(0); /* key specifications: first/last/step above describe our keys fully */
	if (command->is_container()) {
		reply.array(command->subcommand_count);
		for (size_t i = 0; i < command->subcommand_count; i++)
			reply_command_info(reply, &command->subcommands[i]);
	} else {
		reply.set(0);
	}
}

void reply_command_docs(ReplyWriter &reply, const CommandSpec &command)
{
	reply.map(command.is_container() ? 5 : 4);
	reply.bulk("summary");
	reply.bulk(command.summary);
	reply.bulk("since");
	reply.bulk(command.since);
	reply.bulk("group");
	reply.bulk(command.group);
	reply.bulk("complexity");
	reply.bulk(command.complexity);
	if (command.is_container()) {
		reply.bulk("subcommands");
		reply.map(command.subcommand_count);
		for (size_t i = 0; i < command.subcommand_count; i++) {
			reply.bulk(command.subcommands[i].full_name);
			reply_command_docs(reply, command.subcommands[i]);
		}
	}
}

/* A name as COMMAND INFO / DOCS take it: "get", or "client|setname" for a subcommand. */
const CommandSpec *find_command_by_full_name(std::string_view name)
{
	size_t bar = name.find('|');
	if (bar == std::string_view::npos)
		return find_command(name);
	const CommandSpec *container = find_command(name.substr(0, bar));
	if (container == nullptr)
		return nullptr;
	return find_subcommand(*container, name.substr(bar + 1));
}

void command_command(CommandContext &c)
{
	CommandTable table = command_table();
	c.reply.array(table.count);
	for (const CommandSpec &command : table)
		reply_command_info(c.reply, &command);
}

void command_count_command(CommandContext &c)
{
	c.reply.integer(int64_t(command_table().count));
}

void command_info_command(CommandContext &c)
{
	if (c.argc() == 2) {
		command_command(c);
		return;
	}
	c.reply.array(c.argc() - 2);
	for (size_t i = 2; i < c.argc(); i++)
		reply_command_info(c.reply, find_command_by_full_name(c.arg(i)));
}

void command_docs_command(CommandContext &c)
{
	CommandTable table = command_table();
	if (c.argc() == 2) {
		c.reply.map(table.count);
		for (const CommandSpec &command : table) {
			c.reply.bulk(command.full_name);
			reply_command_docs(c.reply, command);
		}
		return;
	}
	size_t found = 0;
	for (size_t i = 2; i < c.argc(); i++)
		found += find_command_by_full_name(c.arg(i)) != nullptr ? 1 : 0;
	c.reply.map(found);
	for (size_t i = 2; i < c.argc(); i++) {
		if (const CommandSpec *command = find_command_by_full_name(c.arg(i))) {
			c.reply.bulk(command->full_name);
			reply_command_docs(c.reply, *command);
		}
	}
}

void command_list_command(CommandContext &c)
{
	CommandTable table = command_table();
	size_t count = 0;
	for (const CommandSpec &command : table)
		count += 1 + command.subcommand_count;
	c.reply.array(count);
	for (const CommandSpec &command : table) {
		c.reply.bulk(command.full_name);
		for (size_t i = 0; i < command.subcommand_count; i++)
			c.reply.bulk(command.subcommands[i].full_name);
	}
}

/* ---- INFO ---- */

enum InfoSection : uint32_t {
	INFO_SERVER = 1u << 0,
	INFO_CLIENTS = 1u << 1,
	INFO_MEMORY = 1u << 2,
	INFO_PERSISTENCE = 1u << 3,
	INFO_STATS = 1u << 4,
	INFO_REPLICATION = 1u << 5,
	INFO_CLUSTER = 1u << 6,
	INFO_KEYSPACE = 1u << 7,
	INFO_ALL = (1u << 8) - 1,
};

constexpr struct {
	std::string_view name;
	uint32_t sections;
} kInfoSectionNames[] = {
	{"server", INFO_SERVER},         {"clients", INFO_CLIENTS},
	{"memory", INFO_MEMORY},         {"persistence", INFO_PERSISTENCE},
	{"stats", INFO_STATS},           {"replication", INFO_REPLICATION},
	{"cluster", INFO_CLUSTER},       {"keyspace", INFO_KEYSPACE},
	{"default", INFO_ALL},           {"all", INFO_ALL},
	{"everything", INFO_ALL},
};

void info_field(std::string &out, std::string_view name, std::string_view value)
{
	out.append(name).append(":").append(value).append("\r\n");
}

template <typename Integer>
void info_number(std::string &out, std::string_view name, Integer value)
{
	out.append(name).append(":");
	append_number(out, value);
	out.append("\r\n");
}

void info_bytes(std::string &out, std::string_view name, uint64_t bytes)
{
	info_number(out, name, bytes);
	out.append(name).append("_human:");
	append_human_bytes(out, bytes);
	out.append("\r\n");
}

void info_command(CommandContext &c)
{
	uint32_t sections = 0;
	if (c.argc() == 1)
		sections = INFO_ALL;
	for (size_t i = 1; i < c.argc(); i++) {
		for (const auto &section : kInfoSectionNames) {
			if (equals_ignore_case(c.arg(i), section.name))
				sections |= section.sections;
		}
	}

	InfoStats stats;
	c.data.fill_info(stats);
	std::string &out = c.scratch.text;
	out.clear();
	/* Sections are separated by an empty line, as in Redis. */
	auto begin_section = [&out](std::string_view title) {
		if (!out.empty())
			out.append("\r\n");
		out.append("# ").append(title).append("\r\n");
	};

	if (sections & INFO_SERVER) {
		begin_section("Server");
		info_field(out, "redis_version", kRedisCompatibleVersion);
		info_field(out, "server_name", "local_cache");
		info_field(out, "local_cache_version", stats.local_cache_version);
		info_field(out, "redis_mode", "standalone");
		info_field(out, "arch_bits", sizeof(void *) == 8 ? "64" : "32");
		info_number(out, "process_id", stats.process_id);
		info_number(out, "tcp_port", stats.tcp_port);
		info_number(out, "uptime_in_seconds", stats.uptime_seconds);
		info_number(out, "uptime_in_days", stats.uptime_seconds / 86400);
	}
	if (sections & INFO_CLIENTS) {
		begin_section("Clients");
		info_number(out, "connected_clients", stats.connected_clients);
		info_number(out, "maxclients", stats.max_clients);
		info_number(out, "blocked_clients", 0);
	}
	if (sections & INFO_MEMORY) {
		begin_section("Memory");
		info_bytes(out, "used_memory", stats.used_memory);
		info_bytes(out, "maxmemory", stats.max_memory);
		info_field(out, "maxmemory_policy", "allkeys-lru");
	}
	if (sections & INFO_PERSISTENCE) {
		/* ioredis waits for loading:0 before it declares the connection ready. */
		begin_section("Persistence");
		info_number(out, "loading", 0);
		info_number(out, "async_loading", 0);
		info_number(out, "rdb_changes_since_last_save", 0);
		info_number(out, "aof_enabled", 0);
	}
	if (sections & INFO_STATS) {
		begin_section("Stats");
		info_number(out, "total_connections_received", stats.total_connections_received);
		info_number(out, "total_commands_processed", stats.total_commands_processed);
		info_number(out, "rejected_connections", stats.rejected_connections);
		info_number(out, "expired_keys", 0);
		info_number(out, "evicted_keys", stats.evicted_keys);
		info_number(out, "keyspace_hits", stats.keyspace_hits);
		info_number(out, "keyspace_misses", stats.keyspace_misses);
	}
	if (sections & INFO_REPLICATION) {
		begin_section("Replication");
		info_field(out, "role", "master");
		info_number(out, "connected_slaves", 0);
	}
	if (sections & INFO_CLUSTER) {
		begin_section("Cluster");
		info_number(out, "cluster_enabled", 0);
	}
	if (sections & INFO_KEYSPACE) {
		begin_section("Keyspace");
		/* Redis lists only the databases that hold keys. */
		if (uint64_t keys = c.data.count_keys(c.session)) {
			out.append("db0:keys=");
			append_number(out, keys);
			out.append(",expires=0,avg_ttl=0\r\n");
		}
	}
	c.reply.verbatim(out);
}

/* ---- CONFIG ---- */

/* The parameters CONFIG GET knows, with their values: what clients ask at start
 * (redis-benchmark reads "save" and "appendonly") and the limits that do apply. */
std::vector<std::pair<std::string_view, std::string>> config_parameters(const InfoStats &stats)
{
	auto number = [](uint64_t value) {
		std::string text;
		append_number(text, value);
		return text;
	};
	return {
		{"save", ""},
		{"appendonly", "no"},
		{"databases", "1"},
		{"cluster-enabled", "no"},
		{"maxclients", number(stats.max_clients)},
		{"maxmemory", number(stats.max_memory)},
		{"maxmemory-policy", "allkeys-lru"},
		{"timeout", number(uint64_t(std::max<int64_t>(0, stats.idle_timeout_seconds)))},
		{"port", number(uint64_t(std::max(0, stats.tcp_port)))},
		{"bind", stats.bind_addresses},
		{"proto-max-bulk-len", number(stats.proto_max_bulk_len)},
		{"client-query-buffer-limit", number(stats.client_query_buffer_limit)},
	};
}

void config_get_command(CommandContext &c)
{
	InfoStats stats;
	c.data.fill_info(stats);
	auto parameters = config_parameters(stats);
	std::vector<bool> matched(parameters.size(), false);
	size_t count = 0;
	for (size_t p = 0; p < parameters.size(); p++) {
		for (size_t i = 2; i < c.argc() && !matched[p]; i++) {
			if (glob_match(c.arg(i), parameters[p].first, true)) {
				matched[p] = true;
				count++;
			}
		}
	}
	c.reply.map(count);
	for (size_t p = 0; p < parameters.size(); p++) {
		if (matched[p]) {
			c.reply.bulk(parameters[p].first);
			c.reply.bulk(parameters[p].second);
		}
	}
}

void config_set_command(CommandContext &c)
{
	c.reply.error("CONFIG SET is not supported: local_cache is configured through PostgreSQL "
				  "settings (local_cache.resp_*)");
}

/* ---- the table ---- */

constexpr uint32_t kConnection = CMD_LOADING | CMD_STALE | CMD_FAST;
constexpr uint32_t kRead = CMD_READONLY | CMD_FAST;
constexpr uint32_t kWrite = CMD_WRITE;

constexpr CommandSpec kClientSubcommands[] = {
	/* full name, arity, flags, first key, last key, step, group, since, summary, complexity,
	 * handler, subcommands */
	{"client|getname", 2, kConnection, 0, 0, 0, "connection", "2.6.9",
	 "Returns the name of the connection.", "O(1)", client_getname_command, nullptr, 0},
	{"client|help", 2, kConnection, 0, 0, 0, "connection", "5.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"client|id", 2, kConnection, 0, 0, 0, "connection", "5.0.0",
	 "Returns the unique client ID of the connection.", "O(1)", client_id_command, nullptr, 0},
	{"client|info", 2, kConnection, 0, 0, 0, "connection", "6.2.0",
	 "Returns information about the connection.", "O(1)", client_info_command, nullptr, 0},
	{"client|maint_notifications", -3, kConnection, 0, 0, 0, "connection", "8.0.0",
	 "Accepts maintenance notifications settings; there are no maintenance events to announce.",
	 "O(1)", client_maint_notifications_command, nullptr, 0},
	{"client|setinfo", 4, kConnection, 0, 0, 0, "connection", "7.2.0",
	 "Sets information specific to the client or connection.", "O(1)", client_setinfo_command,
	 nullptr, 0},
	{"client|setname", 3, kConnection, 0, 0, 0, "connection", "2.6.9",
	 "Sets the connection name.", "O(1)", client_setname_command, nullptr, 0},
};

constexpr CommandSpec kCommandSubcommands[] = {
	{"command|count", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.8.13",
	 "Returns a count of commands.", "O(1)", command_count_command, nullptr, 0},
	{"command|docs", -2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "7.0.0",
	 "Returns documentary information about one, multiple or all commands.",
	 "O(N) where N is the number of commands to look up", command_docs_command, nullptr, 0},
	{"command|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "5.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"command|info", -2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.8.13",
	 "Returns information about one, multiple or all commands.",
	 "O(N) where N is the number of commands to look up", command_info_command, nullptr, 0},
	{"command|list", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "7.0.0",
	 "Returns a list of command names.", "O(N) where N is the total number of commands",
	 command_list_command, nullptr, 0},
};

constexpr CommandSpec kConfigSubcommands[] = {
	{"config|get", -3, CMD_ADMIN | CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.0.0",
	 "Returns the effective values of configuration parameters.",
	 "O(N) when N is the number of configuration parameters provided", config_get_command,
	 nullptr, 0},
	{"config|help", 2, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "5.0.0",
	 "Returns helpful text about the different subcommands.", "O(1)", help_command, nullptr, 0},
	{"config|set", -4, CMD_ADMIN | CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.0.0",
	 "Refused: local_cache is configured through PostgreSQL settings.", "O(1)",
	 config_set_command, nullptr, 0},
};

template <typename T, size_t N>
constexpr size_t count_of(const T (&)[N])
{
	return N;
}

constexpr CommandSpec kCommands[] = {
	/* reads */
	{"get", 2, kRead, 1, 1, 1, "string", "1.0.0",
	 "Returns the row the key <prefix>:<id> names, as JSON.", "O(1)", get_command, nullptr, 0},
	{"mget", -2, kRead, 1, -1, 1, "string", "1.0.0",
	 "Returns the rows of several keys, as JSON, nil for missing keys.",
	 "O(N) where N is the number of keys to retrieve.", mget_command, nullptr, 0},
	{"exists", -2, kRead, 1, -1, 1, "generic", "1.0.0",
	 "Counts how many of the keys name an existing row.", "O(N) where N is the number of keys",
	 exists_command, nullptr, 0},
	{"hget", 3, kRead, 1, 1, 1, "hash", "2.0.0", "Returns one column of a row, as text.", "O(1)",
	 hget_command, nullptr, 0},
	{"hmget", -3, kRead, 1, 1, 1, "hash", "2.0.0",
	 "Returns several columns of a row, as text, nil for NULL or unknown columns.",
	 "O(N) where N is the number of columns being requested.", hmget_command, nullptr, 0},
	{"hgetall", 2, CMD_READONLY, 1, 1, 1, "hash", "2.0.0",
	 "Returns the non-NULL columns of a row and their values, as text.",
	 "O(N) where N is the number of columns.", hgetall_command, nullptr, 0},
	{"dbsize", 1, kRead, 0, 0, 0, "server", "1.0.0", "Returns the number of keys.", "O(1)",
	 dbsize_command, nullptr, 0},

	/* connection */
	{"ping", -1, CMD_FAST, 0, 0, 0, "connection", "1.0.0",
	 "Returns the server's liveliness response.", "O(1)", ping_command, nullptr, 0},
	{"echo", 2, CMD_FAST, 0, 0, 0, "connection", "1.0.0", "Returns the given string.", "O(1)",
	 echo_command, nullptr, 0},
	{"hello", -1, kConnection | CMD_NO_AUTH, 0, 0, 0, "connection", "6.0.0",
	 "Handshakes with the server: protocol version, authentication, connection name.", "O(1)",
	 hello_command, nullptr, 0},
	{"auth", -2, kConnection | CMD_NO_AUTH, 0, 0, 0, "connection", "1.0.0",
	 "Authenticates the connection as a PostgreSQL role.",
	 "O(N) where N is the number of passwords defined for the user", auth_command, nullptr, 0},
	{"select", 2, kConnection, 0, 0, 0, "connection", "1.0.0",
	 "Changes the selected database; only database 0 exists.", "O(1)", select_command, nullptr,
	 0},
	{"reset", 1, kConnection | CMD_NO_AUTH, 0, 0, 0, "connection", "6.2.0",
	 "Resets the connection: RESP2, no name, the default role.", "O(1)", reset_command, nullptr,
	 0},
	{"quit", -1, kConnection | CMD_NO_AUTH, 0, 0, 0, "connection", "1.0.0",
	 "Closes the connection.", "O(1)", quit_command, nullptr, 0},
	{"client", -2, 0, 0, 0, 0, "connection", "2.4.0", "A container for client connection commands.",
	 "Depends on subcommand.", nullptr, kClientSubcommands, count_of(kClientSubcommands)},

	/* server */
	{"command", -1, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "2.8.13",
	 "Returns detailed information about all commands.",
	 "O(N) where N is the total number of commands", command_command, kCommandSubcommands,
	 count_of(kCommandSubcommands)},
	{"config", -2, 0, 0, 0, 0, "server", "2.0.0", "A container for server configuration commands.",
	 "Depends on subcommand.", nullptr, kConfigSubcommands, count_of(kConfigSubcommands)},
	{"info", -1, CMD_LOADING | CMD_STALE, 0, 0, 0, "server", "1.0.0",
	 "Returns information and statistics about the server.", "O(1)", info_command, nullptr, 0},

	/* writes: refused, so that clients get a clear answer instead of "unknown command" */
	{"set", -3, kWrite, 1, 1, 1, "string", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"setnx", 3, kWrite, 1, 1, 1, "string", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"setex", 4, kWrite, 1, 1, 1, "string", "2.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"psetex", 4, kWrite, 1, 1, 1, "string", "2.6.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"getset", 3, kWrite, 1, 1, 1, "string", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"getdel", 2, kWrite, 1, 1, 1, "string", "6.2.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"getex", -2, kWrite, 1, 1, 1, "string", "6.2.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"append", 3, kWrite, 1, 1, 1, "string", "2.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"setrange", 4, kWrite, 1, 1, 1, "string", "2.2.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"incr", 2, kWrite, 1, 1, 1, "string", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"incrby", 3, kWrite, 1, 1, 1, "string", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"incrbyfloat", 3, kWrite, 1, 1, 1, "string", "2.6.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"decr", 2, kWrite, 1, 1, 1, "string", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"decrby", 3, kWrite, 1, 1, 1, "string", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"mset", -3, kWrite, 1, -1, 2, "string", "1.0.1", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"msetnx", -3, kWrite, 1, -1, 2, "string", "1.0.1", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"del", -2, kWrite, 1, -1, 1, "generic", "1.0.0", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"unlink", -2, kWrite, 1, -1, 1, "generic", "4.0.0", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"expire", -3, kWrite, 1, 1, 1, "generic", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"pexpire", -3, kWrite, 1, 1, 1, "generic", "2.6.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"expireat", -3, kWrite, 1, 1, 1, "generic", "1.2.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"pexpireat", -3, kWrite, 1, 1, 1, "generic", "2.6.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"persist", 2, kWrite, 1, 1, 1, "generic", "2.2.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"rename", 3, kWrite, 1, 2, 1, "generic", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"renamenx", 3, kWrite, 1, 2, 1, "generic", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"copy", -3, kWrite, 1, 2, 1, "generic", "6.2.0", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"move", 3, kWrite, 1, 1, 1, "generic", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"hset", -4, kWrite, 1, 1, 1, "hash", "2.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"hsetnx", 4, kWrite, 1, 1, 1, "hash", "2.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"hmset", -4, kWrite, 1, 1, 1, "hash", "2.0.0", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"hdel", -3, kWrite, 1, 1, 1, "hash", "2.0.0", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"hincrby", 4, kWrite, 1, 1, 1, "hash", "2.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"hincrbyfloat", 4, kWrite, 1, 1, 1, "hash", "2.6.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"lpush", -3, kWrite, 1, 1, 1, "list", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"rpush", -3, kWrite, 1, 1, 1, "list", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"sadd", -3, kWrite, 1, 1, 1, "set", "1.0.0", "Refused: write through SQL.", "O(1)",
	 refuse_write_command, nullptr, 0},
	{"zadd", -4, kWrite, 1, 1, 1, "sorted-set", "1.2.0", "Refused: write through SQL.",
	 "O(log(N))", refuse_write_command, nullptr, 0},
	{"flushdb", -1, kWrite, 0, 0, 0, "server", "1.0.0", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
	{"flushall", -1, kWrite, 0, 0, 0, "server", "1.0.0", "Refused: write through SQL.", "O(N)",
	 refuse_write_command, nullptr, 0},
};

/* ---- lookup: an open-addressing hash over the case-folded names, built once ---- */

uint32_t fold_hash(std::string_view name)
{
	uint32_t hash = 2166136261u; /* FNV-1a */
	for (char c : name) {
		hash ^= uint8_t(ascii_lower(c));
		hash *= 16777619u;
	}
	return hash;
}

class CommandIndex {
public:
	CommandIndex()
	{
		static_assert(count_of(kCommands) * 2 <= kSlots, "keep the index at most half full");
		for (const CommandSpec &command : kCommands) {
			size_t slot = fold_hash(command.full_name) & (kSlots - 1);
			while (slots_[slot] != nullptr)
				slot = (slot + 1) & (kSlots - 1);
			slots_[slot] = &command;
			longest_name_ = std::max(longest_name_, command.full_name.size());
		}
	}

	const CommandSpec *find(std::string_view name) const
	{
		/* Hostile or binary argv[0] of any length costs no more than a short compare. */
		if (name.empty() || name.size() > longest_name_)
			return nullptr;
		for (size_t slot = fold_hash(name) & (kSlots - 1); slots_[slot] != nullptr;
			 slot = (slot + 1) & (kSlots - 1)) {
			if (equals_ignore_case(slots_[slot]->full_name, name))
				return slots_[slot];
		}
		return nullptr;
	}

private:
	static constexpr size_t kSlots = 256;
	const CommandSpec *slots_[kSlots] = {};
	size_t longest_name_ = 0;
};

const CommandIndex &command_index()
{
	static const CommandIndex index;
	return index;
}

/* ---- dispatch errors, worded exactly as Redis 7 words them ---- */

void reply_unknown_command(ReplyWriter &reply, const Request &request, std::string &message)
{
	message.assign("unknown command '");
	message.append(c_string_prefix(request[0], 128));
	message.append("', with args beginning with: ");
	size_t args_start = message.size();
	for (size_t i = 1; i < request.argc && message.size() - args_start < 128; i++) {
		size_t room = 128 - (message.size() - args_start);
		message.append("'");
		message.append(c_string_prefix(request[i], room));
		message.append("' ");
	}
	reply.error(message);
}

void reply_unknown_subcommand(ReplyWriter &reply, const Request &request, std::string &message)
{
	message.assign("unknown subcommand '");
	message.append(c_string_prefix(request[1], 128));
	message.append("'. Try ");
	for (char c : c_string(request[0]))
		message += ascii_upper(c);
	message.append(" HELP.");
	reply.error(message);
}

bool arity_matches(const CommandSpec &command, size_t argc)
{
	if (command.arity > 0)
		return argc == size_t(command.arity);
	return argc >= size_t(-command.arity);
}

} // namespace

CommandTable command_table()
{
	return CommandTable{kCommands, count_of(kCommands)};
}

const CommandSpec *find_command(std::string_view name)
{
	return command_index().find(name);
}

const CommandSpec *find_subcommand(const CommandSpec &container, std::string_view name)
{
	for (size_t i = 0; i < container.subcommand_count; i++) {
		if (equals_ignore_case(container.subcommands[i].name(), name))
			return &container.subcommands[i];
	}
	return nullptr;
}

namespace {

/* Whether pattern element at `p` (not '*') matches `c`; moves `p` past the element. */
bool glob_element_matches(std::string_view pattern, size_t &p, char c, bool ignore_case)
{
	auto same = [ignore_case](char a, char b) {
		return ignore_case ? ascii_lower(a) == ascii_lower(b) : a == b;
	};
	char element = pattern[p];
	if (element == '?') {
		p++;
		return true;
	}
	if (element == '[') {
		size_t i = p + 1;
		bool negated = i < pattern.size() && pattern[i] == '^';
		if (negated)
			i++;
		bool matched = false;
		/* An unclosed class runs to the end of the pattern, as in Redis. */
		while (i < pattern.size() && pattern[i] != ']') {
			if (pattern[i] == '\\' && i + 1 < pattern.size()) {
				i++;
				matched |= pattern[i] == c;
			} else if (i + 2 < pattern.size() && pattern[i + 1] == '-') {
				char low = pattern[i], high = pattern[i + 2];
				if (low > high)
					std::swap(low, high);
				char x = c;
				if (ignore_case) {
					low = ascii_lower(low);
					high = ascii_lower(high);
					x = ascii_lower(x);
				}
				matched |= x >= low && x <= high;
				i += 2;
			} else {
				matched |= same(pattern[i], c);
			}
			i++;
		}
		p = std::min(i + 1, pattern.size());
		return matched != negated;
	}
	if (element == '\\' && p + 1 < pattern.size())
		p++;
	bool matched = same(pattern[p], c);
	p++;
	return matched;
}

} // namespace

bool glob_match(std::string_view pattern, std::string_view text, bool ignore_case)
{
	/* Each element other than '*' matches exactly one byte, so backtracking to the most
	 * recent '*' alone is complete: the classic linear-time wildcard walk. */
	size_t p = 0, t = 0;
	size_t star = std::string_view::npos, star_text = 0;
	while (t < text.size()) {
		if (p < pattern.size() && pattern[p] == '*') {
			star = ++p;
			star_text = t;
			continue;
		}
		size_t next = p;
		if (p < pattern.size() && glob_element_matches(pattern, next, text[t], ignore_case)) {
			p = next;
			t++;
			continue;
		}
		if (star == std::string_view::npos)
			return false;
		p = star;
		t = ++star_text;
	}
	while (p < pattern.size() && pattern[p] == '*')
		p++;
	return p == pattern.size();
}

CommandProcessor::CommandProcessor(DataSource &data) : data_(data), scratch_(new Scratch) {}

CommandProcessor::~CommandProcessor() = default;

void CommandProcessor::execute(const Request &request, Session &session, ReplyBuffer &out)
{
	ReplyWriter reply(out, session.protocol);
	if (request.argc == 0) {
		/* The parser never produces one; answer anyway so replies stay in step. */
		reply.error("empty command");
		return;
	}

	const CommandSpec *command = find_command(request[0]);
	if (command == nullptr) {
		reply_unknown_command(reply, request, scratch_->text);
		return;
	}
	if (command->is_container() && request.argc >= 2) {
		const CommandSpec *subcommand = find_subcommand(*command, request[1]);
		if (subcommand == nullptr) {
			reply_unknown_subcommand(reply, request, scratch_->text);
			return;
		}
		command = subcommand;
	}
	if (!arity_matches(*command, request.argc) || command->handler == nullptr) {
		std::string &message = scratch_->text;
		message.assign("wrong number of arguments for '");
		message.append(command->full_name);
		message.append("' command");
		reply.error(message);
		return;
	}
	if (!(command->flags & CMD_NO_AUTH) && !session.authenticated()) {
		reply.error_with_code("NOAUTH", "Authentication required.");
		return;
	}

	size_t reply_start = out.size();
	session.retry_later = false;
	try {
		CommandContext context{request, session, data_, reply, *scratch_, *command};
		command->handler(context);
		if (session.retry_later)
			out.truncate(reply_start);
	} catch (const std::exception &e) {
		/* A DataSource failure (a PostgreSQL error turned into an exception) fails this
		 * command only; whatever part of a reply was written goes. */
		out.truncate(reply_start);
		std::string &message = scratch_->text;
		message.assign("internal error: ");
		message.append(e.what());
		reply.error(message);
	}
}

} // namespace local_cache::resp
