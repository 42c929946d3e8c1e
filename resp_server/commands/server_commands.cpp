/*
 * server_commands.cpp — the server commands, as Redis's server group: COMMAND and its subcommands
 * (COUNT, DOCS, INFO, LIST), read from the command table; INFO, from ServerInfo's statistics
 * and the command statistics every process shares (command_stats.h); CONFIG GET over the few
 * parameters clients ask for, CONFIG SET, refused, and CONFIG RESETSTAT; SLOWLOG and LATENCY
 * over the worker's CommandMonitor and the shared statistics; INFO's command statistics,
 * SLOWLOG and LATENCY show each role its own requests, members of pg_read_all_stats every
 * role's; and the HELP of every container.
 */
#include "resp_server/commands/command_context.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace local_cache::resp {

/* What INFO and CONFIG GET say about eviction: the cache evicts by CLOCK (second chance), which
 * is none of Redis's policies; the value says so rather than borrowing allkeys-lru. */
constexpr std::string_view kEvictionPolicy = "allkeys-clock";

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

namespace {

struct FlagName {
	uint32_t flag;
	std::string_view name;
};
constexpr FlagName kFlagNames[] = {
	{CMD_WRITE, "write"}, {CMD_READONLY, "readonly"}, {CMD_ADMIN, "admin"},
	{CMD_LOADING, "loading"}, {CMD_STALE, "stale"}, {CMD_FAST, "fast"},
	{CMD_NO_AUTH, "no_auth"}, {CMD_PUBSUB, "pubsub"},
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
	else if (command.group == "pubsub")
		out[count++] = "@pubsub";
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

} // namespace

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

enum InfoSection : uint32_t {
	INFO_SERVER = 1u << 0,
	INFO_CLIENTS = 1u << 1,
	INFO_MEMORY = 1u << 2,
	INFO_PERSISTENCE = 1u << 3,
	INFO_STATS = 1u << 4,
	INFO_REPLICATION = 1u << 5,
	INFO_CLUSTER = 1u << 6,
	INFO_KEYSPACE = 1u << 7,
	INFO_COMMANDSTATS = 1u << 8,
	INFO_ERRORSTATS = 1u << 9,
	INFO_LATENCYSTATS = 1u << 10,
	/* As Redis: INFO, INFO default; INFO all and everything add commandstats and latencystats. */
	INFO_DEFAULT = (1u << 8) - 1 + INFO_ERRORSTATS,
	INFO_ALL = (1u << 11) - 1,
};

constexpr struct {
	std::string_view name;
	uint32_t sections;
} kInfoSectionNames[] = {
	{"server", INFO_SERVER},         {"clients", INFO_CLIENTS},
	{"memory", INFO_MEMORY},         {"persistence", INFO_PERSISTENCE},
	{"stats", INFO_STATS},           {"replication", INFO_REPLICATION},
	{"cluster", INFO_CLUSTER},       {"keyspace", INFO_KEYSPACE},
	{"commandstats", INFO_COMMANDSTATS}, {"errorstats", INFO_ERRORSTATS},
	{"latencystats", INFO_LATENCYSTATS},
	{"default", INFO_DEFAULT},       {"all", INFO_ALL},
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

/*
 * The command statistics the caller may see (command_stats.h), summed over every process, in
 * scratch.command_totals by command number: every role's to roles with the privileges of
 * pg_read_all_stats, as SLOWLOG's entries, else its own role's (none before a login). This
 * worker's latest requests are folded first, so a connection sees its own requests at once.
 */
const std::vector<CommandCounters> &visible_command_totals(CommandContext &c)
{
	std::vector<CommandCounters> &totals = c.scratch.command_totals;
	totals.assign(command_count() + 1, CommandCounters{});
	CommandStatsStore *store = c.monitor.stats_store();
	if (store == nullptr)
		return totals;
	c.monitor.fold_stats();
	if (c.data.server.sees_activity_of(c.session, ServerInfo::kEveryRole))
		store->read(std::nullopt, totals);
	else if (c.session.role)
		store->read(c.session.role->id, totals);
	return totals;
}

} // namespace

void info_command(CommandContext &c)
{
	uint32_t sections = 0;
	if (c.argc() == 1)
		sections = INFO_DEFAULT;
	for (size_t i = 1; i < c.argc(); i++) {
		for (const auto &section : kInfoSectionNames) {
			if (equals_ignore_case(c.arg(i), section.name))
				sections |= section.sections;
		}
	}

	InfoStats stats;
	c.data.server.fill_info(stats);
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
		info_field(out, "postgresql_version", stats.postgresql_version);
		info_field(out, "redis_mode", "standalone");
		info_field(out, "arch_bits", sizeof(void *) == 8 ? "64" : "32");
		info_number(out, "process_id", stats.process_id);
		info_number(out, "tcp_port", stats.tcp_port);
		if (stats.tls_port != 0) {
			info_number(out, "tls_port", stats.tls_port);
			info_field(out, "tls_auth_clients", stats.tls_auth_clients);
		}
		info_number(out, "uptime_in_seconds", stats.uptime_seconds);
		info_number(out, "uptime_in_days", stats.uptime_seconds / 86400);
	}
	if (sections & INFO_CLIENTS) {
		begin_section("Clients");
		info_number(out, "connected_clients", stats.connected_clients);
		info_number(out, "maxclients", stats.max_clients);
		info_number(out, "client_recent_max_output_buffer", stats.largest_output_buffer);
		info_number(out, "blocked_clients", 0);
	}
	if (sections & INFO_MEMORY) {
		begin_section("Memory");
		info_bytes(out, "used_memory", stats.used_memory);
		info_bytes(out, "maxmemory", stats.max_memory);
		info_field(out, "maxmemory_policy", kEvictionPolicy);
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
		info_number(out, "batch_pauses", stats.batch_pauses);
		info_number(out, "expired_keys", 0);
		info_number(out, "evicted_keys", stats.evicted_keys);
		info_number(out, "keyspace_hits", stats.keyspace_hits);
		info_number(out, "keyspace_misses", stats.keyspace_misses);
		/* CLIENT TRACKING: the serving worker's table (each worker tracks its connections). */
		TrackingStats tracking = c.tracking.stats();
		info_number(out, "tracking_total_keys", tracking.keys);
		info_number(out, "tracking_total_items", tracking.items);
		info_number(out, "tracking_total_prefixes", tracking.prefixes);
	}
	if ((sections & INFO_REPLICATION) && c.cluster != nullptr && c.cluster->enabled()) {
		begin_section("Replication");
		append_replication_info(c, out); /* cluster_commands.cpp: the shard, with WAL offsets */
	} else if (sections & INFO_REPLICATION) {
		begin_section("Replication");
		/* A hot standby serves RESP too; its cache follows the primary through WAL. */
		if (stats.replica) {
			info_field(out, "role", "slave");
			/* Where the primary is, as pg_stat_wal_receiver shows it: only to members of
			 * pg_read_all_stats. */
			if (c.data.server.sees_activity_of(c.session, ServerInfo::kEveryRole)) {
				info_field(out, "master_host", stats.master_host);
				info_number(out, "master_port", stats.master_port);
			}
			info_field(out, "master_link_status", stats.master_link_up ? "up" : "down");
			info_number(out, "slave_repl_offset", stats.slave_repl_offset);
			info_number(out, "slave_read_only", 1);
		} else {
			info_field(out, "role", "master");
		}
		info_number(out, "connected_slaves", 0);
		info_number(out, "master_repl_offset", stats.master_repl_offset);
	}
	if (sections & (INFO_COMMANDSTATS | INFO_ERRORSTATS | INFO_LATENCYSTATS)) {
		const std::vector<CommandCounters> &totals = visible_command_totals(c);
		if (sections & INFO_COMMANDSTATS) {
			begin_section("Commandstats");
			append_commandstats(out, totals);
		}
		if (sections & INFO_ERRORSTATS) {
			begin_section("Errorstats");
			append_errorstats(out, totals);
		}
		if (sections & INFO_LATENCYSTATS) {
			begin_section("Latencystats");
			append_latencystats(out, totals);
		}
	}
	if (sections & INFO_CLUSTER) {
		begin_section("Cluster");
		info_number(out, "cluster_enabled", c.cluster != nullptr && c.cluster->enabled() ? 1 : 0);
	}
	if (sections & INFO_KEYSPACE) {
		begin_section("Keyspace");
		/* Redis lists only the databases that hold keys. */
		if (uint64_t keys = c.data.rows.count_keys(c.session)) {
			out.append("db0:keys=");
			append_number(out, keys);
			out.append(",expires=0,avg_ttl=0\r\n");
		}
	}
	c.reply.verbatim(out);
}

/* ---- CONFIG ---- */

namespace {

/* The parameters CONFIG GET knows, with their values: what clients ask at start
 * (redis-benchmark reads "save" and "appendonly") and the limits that do apply. */
std::vector<std::pair<std::string_view, std::string>> config_parameters(const InfoStats &stats,
																	   const SlowlogSettings &slowlog)
{
	auto number = [](auto value) {
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
		{"maxmemory-policy", std::string(kEvictionPolicy)},
		{"timeout", number(uint64_t(std::max<int64_t>(0, stats.idle_timeout_seconds)))},
		{"port", number(uint64_t(std::max(0, stats.tcp_port)))},
		{"tls-port", number(uint64_t(std::max(0, stats.tls_port)))},
		{"tls-auth-clients", stats.tls_auth_clients.empty() ? std::string("no") : stats.tls_auth_clients},
		{"bind", stats.bind_addresses},
		{"proto-max-bulk-len", number(stats.proto_max_bulk_len)},
		{"client-query-buffer-limit", number(stats.client_query_buffer_limit)},
		{"slowlog-log-slower-than", number(slowlog.log_slower_than_us)},
		{"slowlog-max-len", number(slowlog.max_length)},
	};
}

} // namespace

void config_get_command(CommandContext &c)
{
	InfoStats stats;
	c.data.server.fill_info(stats);
	auto parameters = config_parameters(stats, c.monitor.settings());
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

/* CONFIG RESETSTAT: INFO's command statistics of every role start again from zero, as Redis's
 * (its other counters are the server's: local_cache.reset_stats() resets the cache's). */
void config_resetstat_command(CommandContext &c)
{
	if (CommandStatsStore *store = c.monitor.stats_store()) {
		if (!store->may_reset(c.session)) {
			c.reply.error_with_code("NOPERM", "this user has no permissions to run the 'config|resetstat' command: it "
											  "forgets every role's statistics; roles that may execute "
											  "local_cache.resp_reset_stats() may");
			return;
		}
		c.monitor.fold_stats();
		store->reset();
	}
	c.reply.ok();
}

void config_set_command(CommandContext &c)
{
	c.reply.error("CONFIG SET is not supported: local_cache is configured through PostgreSQL "
				  "settings (local_cache.resp_*)");
}

/* TIME: the server's clock, as seconds and microseconds. */
void time_command(CommandContext &c)
{
	int64_t micros = c.data.server.now_microseconds();
	std::string &text = c.scratch.text;
	c.reply.array(2);
	text.clear();
	append_number(text, micros / 1000000);
	c.reply.bulk(text);
	text.clear();
	append_number(text, micros % 1000000);
	c.reply.bulk(text);
}

/* ---- SLOWLOG and LATENCY: this worker's requests (monitor.h) ---- */

namespace {

/* An entry of another role shows only to roles that may read every role's statistics, as
 * pg_stat_activity shows other roles' queries; entries from before authentication too. */
bool entry_visible(const SlowlogEntry &entry, const Session &session, bool reads_all_stats)
{
	return reads_all_stats || (entry.role_id && session.role && *entry.role_id == session.role->id);
}

size_t visible_entries(CommandContext &c, bool reads_all_stats, size_t limit)
{
	size_t count = 0;
	for (const SlowlogEntry &entry : c.monitor.slowlog())
		if (count < limit && entry_visible(entry, c.session, reads_all_stats))
			count++;
	return count;
}

/* SLOWLOG RESET and LATENCY RESET forget every role's requests: only for those who see them. */
bool may_reset(CommandContext &c)
{
	if (c.data.server.sees_activity_of(c.session, ServerInfo::kEveryRole))
		return true;
	std::string &message = c.scratch.text;
	message.assign("this user has no permissions to run the '").append(c.command.full_name);
	message.append("' command: it forgets other roles' requests; members of pg_read_all_stats may");
	c.reply.error_with_code("NOPERM", message);
	return false;
}

/* LATENCY LATEST's events as SLOWLOG GET's entries: every role's for roles that may read every
 * role's statistics, else the caller's own role's; none before a login. */
const LatencyRecord *visible_latency(CommandContext &c)
{
	if (c.data.server.sees_activity_of(c.session, ServerInfo::kEveryRole))
		return &c.monitor.every_role_latency();
	return c.session.role ? c.monitor.role_latency(c.session.role->id) : nullptr;
}

/* Redis's reply: calls, then power-of-two buckets up to the one that holds the longest call,
 * each with the count of calls up to it. */
void reply_histogram(CommandContext &c, const CommandSpec &command, const CommandCounters &counters)
{
	uint64_t cumulative[LatencyHistogram::kPowers];
	counters.latency.cumulative_powers_of_two(cumulative);
	size_t last = 0;
	while (last + 1 < LatencyHistogram::kPowers && cumulative[last] < cumulative[LatencyHistogram::kPowers - 1])
		last++;
	c.reply.bulk(command.full_name);
	c.reply.map(2);
	c.reply.bulk("calls");
	c.reply.integer(int64_t(counters.calls));
	c.reply.bulk("histogram_usec");
	c.reply.map(last + 1);
	for (size_t i = 0; i <= last; i++) {
		c.reply.integer(int64_t(1) << i);
		c.reply.integer(int64_t(cumulative[i]));
	}
}

/* Calls visit(command) for every command and subcommand of the table, in table order. */
template <typename Visit>
void each_command(Visit visit)
{
	for (const CommandSpec &command : command_table()) {
		visit(command);
		for (size_t i = 0; i < command.subcommand_count; i++)
			visit(command.subcommands[i]);
	}
}

} // namespace

void slowlog_get_command(CommandContext &c)
{
	int64_t count = 10;
	if (c.argc() > 3) {
		c.reply.error("unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP.");
		return;
	}
	if (c.argc() == 3) {
		std::string_view text = c.arg(2);
		auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
		if (error != std::errc() || end != text.data() + text.size() || count < -1) {
			c.reply.error("count should be greater than or equal to -1");
			return;
		}
	}
	bool all = c.data.server.sees_activity_of(c.session, ServerInfo::kEveryRole);
	size_t limit = count == -1 ? SIZE_MAX : size_t(count);
	c.reply.array(visible_entries(c, all, limit));
	size_t sent = 0;
	for (const SlowlogEntry &entry : c.monitor.slowlog()) {
		if (sent == limit)
			break;
		if (!entry_visible(entry, c.session, all))
			continue;
		sent++;
		c.reply.array(6);
		c.reply.integer(int64_t(entry.id));
		c.reply.integer(entry.timestamp_seconds);
		c.reply.integer(entry.duration_us);
		c.reply.array(entry.arguments.size());
		for (const std::string &argument : entry.arguments)
			c.reply.bulk(argument);
		c.reply.bulk(entry.peer_address);
		c.reply.bulk(entry.client_name);
	}
}

void slowlog_len_command(CommandContext &c)
{
	c.reply.integer(int64_t(visible_entries(c, c.data.server.sees_activity_of(c.session, ServerInfo::kEveryRole), SIZE_MAX)));
}

void slowlog_reset_command(CommandContext &c)
{
	if (!may_reset(c))
		return;
	c.monitor.reset_slowlog();
	c.reply.simple_string("OK");
}

/* The latency monitor has one event, "command": requests at or above the slow log's threshold. */
void latency_latest_command(CommandContext &c)
{
	const LatencyRecord *latency = visible_latency(c);
	const std::optional<LatencyEvent> &event = latency != nullptr ? latency->command_event : std::nullopt;
	if (!event) {
		c.reply.array(0);
		return;
	}
	c.reply.array(1);
	c.reply.array(4);
	c.reply.bulk("command");
	c.reply.integer(event->latest_seconds);
	c.reply.integer(event->latest_ms);
	c.reply.integer(event->max_ms);
}

/* Every command that ran, on any worker, or those named (unknown names are left out, as Redis
 * does): INFO's command statistics, as the caller may see them. */
void latency_histogram_command(CommandContext &c)
{
	const std::vector<CommandCounters> &totals = visible_command_totals(c);
	std::vector<const CommandSpec *> &chosen = c.scratch.commands;
	chosen.clear();
	auto choose = [&](const CommandSpec &command) {
		if (totals[command_number(command)].calls != 0 &&
			std::find(chosen.begin(), chosen.end(), &command) == chosen.end())
			chosen.push_back(&command);
	};
	if (c.argc() == 2) {
		each_command(choose);
	} else {
		for (size_t i = 2; i < c.argc(); i++) {
			std::string_view name = c.arg(i);
			size_t bar = name.find('|');
			const CommandSpec *command = find_command(name.substr(0, bar));
			if (command != nullptr && bar != std::string_view::npos)
				command = find_subcommand(*command, name.substr(bar + 1));
			if (command != nullptr)
				choose(*command);
		}
	}
	c.reply.map(chosen.size());
	for (const CommandSpec *command : chosen)
		reply_histogram(c, *command, totals[command_number(*command)]);
}

void latency_reset_command(CommandContext &c)
{
	if (!may_reset(c))
		return;
	bool named = c.argc() == 2;
	for (size_t i = 2; i < c.argc(); i++)
		named = named || equals_ignore_case(c.arg(i), "command");
	int64_t reset = named && c.monitor.every_role_latency().command_event ? 1 : 0;
	if (named)
		c.monitor.reset_latency();
	c.reply.integer(reset);
}

} // namespace local_cache::resp
