/*
 * connection_commands.cpp — the connection commands, as Redis's connection group: PING, ECHO, the
 * handshake (HELLO, AUTH), SELECT, RESET, QUIT and the CLIENT subcommands clients send at
 * connect. They read and change the Session; AUTH and HELLO AUTH check passwords through the
 * Logins interface.
 */
#include "resp_server/commands/command_context.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace local_cache::resp {

namespace {

/* Client names and library attributes: printable ASCII without spaces, so that CLIENT LIST
 * lines can be split on spaces (Redis's validateClientAttr). */
bool is_valid_client_attribute(std::string_view value)
{
	for (char c : value) {
		if (c < '!' || c > '~')
			return false;
	}
	return true;
}

constexpr std::string_view kInvalidClientName =
	"Client names cannot contain spaces, newlines or special characters.";

void reply_syntax_error(CommandContext &c)
{
	c.reply.error("syntax error");
}

/* AUTH and HELLO ... AUTH: true when the session is now the role; otherwise the error is
 * answered, or nothing when the answer is not known yet (the request runs again later). */
bool log_in(CommandContext &c, std::optional<std::string_view> user, std::string_view password)
{
	AuthResult result = c.data.logins.authenticate(c.session, user, password);
	switch (result.status) {
	case AuthResult::Status::Ok:
		c.session.role = std::move(result.role);
		return true;
	case AuthResult::Status::Pending:
		c.session.retry_later = true;
		return false;
	case AuthResult::Status::Denied:
		c.reply.error_with_code(result.error_code, result.message);
		return false;
	}
	return false;
}

/* Redis clients configured with a password only send the user name "default". */
std::optional<std::string_view> role_name_for(std::string_view user)
{
	if (user == "default")
		return std::nullopt;
	return user;
}

} // namespace

void ping_command(CommandContext &c)
{
	if (c.argc() > 2) {
		/* PING's arity is -1 and the check is its own, as in Redis. */
		c.reply.error("wrong number of arguments for 'ping' command");
		return;
	}
	if (ping_subscribed(c))
		return;
	if (c.argc() == 2)
		c.reply.bulk(c.arg(1));
	else
		c.reply.simple_string("PONG");
}

void echo_command(CommandContext &c)
{
	c.reply.bulk(c.arg(1));
}

void auth_command(CommandContext &c)
{
	if (c.argc() > 3) {
		reply_syntax_error(c);
		return;
	}
	std::optional<std::string_view> user;
	std::string_view password;
	if (c.argc() == 2) {
		password = c.arg(1);
	} else {
		user = role_name_for(c.arg(1));
		password = c.arg(2);
	}
	if (log_in(c, user, password))
		c.reply.ok();
}

void hello_command(CommandContext &c)
{
	int64_t version = 0;
	size_t next = 1;
	if (c.argc() >= 2) {
		if (!parse_canonical_int64(c.arg(next++), &version)) {
			c.reply.error("Protocol version is not an integer or out of range");
			return;
		}
		if (version < 2 || version > 3) {
			c.reply.error_with_code("NOPROTO", "unsupported protocol version");
			return;
		}
	}

	std::optional<std::string_view> user;
	std::optional<std::string_view> password;
	std::optional<std::string_view> client_name;
	for (size_t j = next; j < c.argc(); j++) {
		size_t more = c.argc() - 1 - j;
		std::string_view option = c.arg(j);
		if (equals_ignore_case(option, "AUTH") && more >= 2) {
			user = c.arg(j + 1);
			password = c.arg(j + 2);
			j += 2;
		} else if (equals_ignore_case(option, "SETNAME") && more >= 1) {
			client_name = c.arg(j + 1);
			if (!is_valid_client_attribute(*client_name)) {
				c.reply.error(kInvalidClientName);
				return;
			}
			j++;
		} else {
			std::string &message = c.scratch.text;
			message.assign("Syntax error in HELLO option '");
			message.append(c_string(option));
			message.append("'");
			c.reply.error(message);
			return;
		}
	}

	if (password && !log_in(c, role_name_for(*user), *password))
		return;
	if (!c.session.authenticated()) {
		c.reply.error_with_code(
			"NOAUTH", "HELLO must be called with the client already authenticated, otherwise the "
					  "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the "
					  "client and select the RESP protocol version at the same time");
		return;
	}
	if (client_name)
		c.session.name.assign(client_name->data(), client_name->size());
	if (version != 0) {
		c.session.protocol = int(version);
		c.reply.set_protocol(int(version));
	}

	c.reply.map(7);
	c.reply.bulk("server");
	c.reply.bulk("redis");
	c.reply.bulk("version");
	c.reply.bulk(kRedisCompatibleVersion);
	c.reply.bulk("proto");
	c.reply.integer(c.session.protocol);
	c.reply.bulk("id");
	c.reply.integer(int64_t(c.session.id));
	c.reply.bulk("mode");
	c.reply.bulk("standalone");
	c.reply.bulk("role");
	c.reply.bulk("master");
	c.reply.bulk("modules");
	c.reply.array(0);
}

void select_command(CommandContext &c)
{
	int64_t index = 0;
	if (!parse_canonical_int64(c.arg(1), &index) || index < INT32_MIN || index > INT32_MAX) {
		c.reply.error("value is not an integer or out of range");
		return;
	}
	if (index != 0) {
		c.reply.error("DB index is out of range");
		return;
	}
	c.reply.ok();
}

void reset_command(CommandContext &c)
{
	/* As Redis's RESET: back to RESP2, no name, the default role, tracking off, no
	 * subscriptions; the library attributes stay because they still describe the client
	 * behind the connection. */
	stop_tracking(c);
	unsubscribe_all(c.session);
	c.session.protocol = 2;
	c.reply.set_protocol(2);
	c.session.name.clear();
	c.session.multi.clear();
	c.session.watched.clear();
	c.session.cluster_readonly = false;
	c.session.role = c.data.logins.default_role(c.session);
	c.reply.simple_string("RESET");
}

void quit_command(CommandContext &c)
{
	c.session.close_after_reply = true;
	c.reply.ok();
}

/* ---- CLIENT ---- */

void client_setname_command(CommandContext &c)
{
	std::string_view name = c.arg(2);
	if (!is_valid_client_attribute(name)) {
		c.reply.error(kInvalidClientName);
		return;
	}
	c.session.name.assign(name.data(), name.size());
	c.reply.ok();
}

/* CLIENT NO-EVICT and NO-TOUCH ON|OFF: accepted and without effect. Past
 * local_cache.resp_client_memory the biggest connections are closed whatever they set (a role
 * must not exempt itself at the others' expense), and reads do not touch keys in a way a
 * client could see. */
void client_no_evict_command(CommandContext &c)
{
	if (equals_ignore_case(c.arg(2), "on") || equals_ignore_case(c.arg(2), "off"))
		c.reply.ok();
	else
		c.reply.error("syntax error");
}

void client_getname_command(CommandContext &c)
{
	if (c.session.name.empty())
		c.reply.null();
	else
		c.reply.bulk(c.session.name);
}

void client_id_command(CommandContext &c)
{
	c.reply.integer(int64_t(c.session.id));
}

void client_setinfo_command(CommandContext &c)
{
	std::string_view attribute = c.arg(2);
	std::string_view value = c.arg(3);
	std::string *destination = nullptr;
	if (equals_ignore_case(attribute, "lib-name"))
		destination = &c.session.lib_name;
	else if (equals_ignore_case(attribute, "lib-ver"))
		destination = &c.session.lib_version;

	std::string &message = c.scratch.text;
	if (destination == nullptr) {
		message.assign("Unrecognized option '");
		message.append(c_string(attribute));
		message.append("'");
		c.reply.error(message);
		return;
	}
	if (!is_valid_client_attribute(value)) {
		message.assign(c_string(attribute));
		message.append(" cannot contain spaces, newlines or special characters.");
		c.reply.error(message);
		return;
	}
	destination->assign(value.data(), value.size());
	c.reply.ok();
}

/* One CLIENT LIST line in Redis 7.2's field order; memory fields we do not track are reported
 * as Redis reports them for an idle client. */
namespace {

/* One line of CLIENT INFO / CLIENT LIST, as Redis 7.2 formats it; `now_ms` is when the
 * current request arrived. */
void append_client_line(std::string &line, const Session &s, const Session &caller, ClientDirectory *clients,
						int64_t now_ms, std::string_view last_command)
{
	line.append("id=");
	append_number(line, s.id);
	line.append(" addr=").append(s.peer_address);
	line.append(" laddr=").append(s.local_address);
	line.append(" fd=");
	append_number(line, s.fd);
	line.append(" name=").append(s.name);
	line.append(" age=");
	append_number(line, std::max<int64_t>(0, (now_ms - s.connected_at_ms) / 1000));
	line.append(" idle=");
	append_number(line, std::max<int64_t>(0, (now_ms - s.last_request_at_ms) / 1000));
	append_client_flags(line, s, caller, clients);
	line.append(" multi=");
	append_number(line, s.multi.active ? int64_t(s.multi.count()) : -1);
	line.append(" watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=");
	append_number(line, s.multi.active ? s.multi.memory() : 0);
	line.append(" rbs=0 rbp=0 obl=0 oll=0 omem=");
	append_number(line, s.unsent_output);
	line.append(" tot-mem=0 events=r cmd=").append(last_command);
	line.append(" user=");
	line.append(s.role ? std::string_view(s.role->name) : std::string_view("default"));
	line.append(" redir=");
	append_number(line, s.tracking.on ? int64_t(s.tracking.redirect) : -1);
	line.append(" resp=");
	append_number(line, s.protocol);
	line.append(" lib-name=").append(s.lib_name);
	line.append(" lib-ver=").append(s.lib_version);
	line.append(s.tls ? " tls=yes" : " tls=no");
	line.append("\n");
}

/*
 * Every session this command can see, by id (Redis lists clients in id order): the caller's
 * own, those of its role, and those of the roles whose activity PostgreSQL shows it
 * (ServerInfo::sees_activity_of, asked once per role). The others are left out rather than
 * shown with fields masked: tools parse CLIENT LIST lines, and a line of placeholders would
 * read as a client with that address and name.
 */
std::vector<const Session *> visible_sessions(CommandContext &c)
{
	std::vector<const Session *> sessions;
	if (c.clients == nullptr)
		sessions.push_back(&c.session);
	else
		c.clients->each_session([&](const Session &s) { sessions.push_back(&s); });
	std::vector<std::pair<uint64_t, bool>> known; /* role, whether its sessions are seen */
	auto hidden = [&](const Session *s) {
		if (s == &c.session)
			return false;
		uint64_t role = s->role ? s->role->id : 0;
		if (c.session.role && s->role && role == c.session.role->id)
			return false;
		for (const auto &[id, seen] : known)
			if (id == role)
				return !seen;
		known.emplace_back(role, c.data.server.sees_activity_of(c.session, role));
		return !known.back().second;
	};
	sessions.erase(std::remove_if(sessions.begin(), sessions.end(), hidden), sessions.end());
	std::sort(sessions.begin(), sessions.end(), [](const Session *a, const Session *b) { return a->id < b->id; });
	return sessions;
}

/* Redis's client type of a connection: pubsub while subscribed, else normal (there are no
 * replicas or masters here); an empty type is any. */
bool is_of_type(const Session &s, std::string_view type)
{
	return type.empty() || equals_ignore_case(type, s.subscribed() ? "pubsub" : "normal");
}

/* Redis's client types. */
bool is_client_type(std::string_view type)
{
	for (std::string_view known : {"normal", "master", "replica", "slave", "pubsub"})
		if (equals_ignore_case(type, known))
			return true;
	return false;
}

} // namespace

void client_info_command(CommandContext &c)
{
	std::string &line = c.scratch.text;
	line.clear();
	append_client_line(line, c.session, c.session, c.clients, c.session.last_request_at_ms, "client|info");
	c.reply.verbatim(line);
}

/* CLIENT LIST [TYPE type] [ID id ...]: the connections of the worker serving the request. */
void client_list_command(CommandContext &c)
{
	std::string_view type; /* any */
	std::vector<uint64_t> ids;
	for (size_t i = 2; i < c.argc(); i++) {
		if (equals_ignore_case(c.arg(i), "type") && i + 1 < c.argc()) {
			type = c.arg(++i);
			if (!is_client_type(type)) {
				c.scratch.text.assign("Unknown client type '").append(c_string_prefix(type, 128)).append("'");
				c.reply.error(c.scratch.text);
				return;
			}
		} else if (equals_ignore_case(c.arg(i), "id") && i + 1 < c.argc()) {
			for (i++; i < c.argc(); i++) {
				int64_t id = 0;
				if (!parse_canonical_int64(c.arg(i), &id) || id <= 0) {
					c.reply.error("Invalid client ID");
					return;
				}
				ids.push_back(uint64_t(id));
			}
		} else {
			reply_syntax_error(c);
			return;
		}
	}
	std::string &lines = c.scratch.text;
	lines.clear();
	for (const Session *s : visible_sessions(c)) {
		if (is_of_type(*s, type) && (ids.empty() || std::find(ids.begin(), ids.end(), s->id) != ids.end()))
			append_client_line(lines, *s, c.session, c.clients, c.session.last_request_at_ms,
							   s == &c.session ? "client|list" : "NULL");
	}
	c.reply.verbatim(lines);
}

/*
 * CLIENT KILL addr:port, or CLIENT KILL [ID id] [ADDR addr] [LADDR addr] [USER name] [TYPE t]
 * [MAXAGE s] [SKIPME yes|no]: closes the matching connections of the worker serving the request
 * that act as the caller's role (as pg_terminate_backend allows without pg_signal_backend). The
 * caller's own connection closes after this reply.
 */
void client_kill_command(CommandContext &c)
{
	struct Filter {
		std::optional<uint64_t> id;
		std::optional<std::string_view> addr, laddr, user;
		std::optional<int64_t> max_age;
		std::string_view type; /* any */
		bool skip_me = true;
	} filter;
	bool old_style = c.argc() == 3;
	if (old_style) {
		filter.addr = c.arg(2);
		filter.skip_me = false;
	}
	for (size_t i = 2; !old_style && i < c.argc(); i += 2) {
		if (i + 1 >= c.argc()) {
			reply_syntax_error(c);
			return;
		}
		std::string_view option = c.arg(i), value = c.arg(i + 1);
		int64_t number = 0;
		if (equals_ignore_case(option, "id")) {
			if (!parse_canonical_int64(value, &number) || number <= 0) {
				c.reply.error("client-id should be greater than 0");
				return;
			}
			filter.id = uint64_t(number);
		} else if (equals_ignore_case(option, "addr")) {
			filter.addr = value;
		} else if (equals_ignore_case(option, "laddr")) {
			filter.laddr = value;
		} else if (equals_ignore_case(option, "user")) {
			filter.user = value;
		} else if (equals_ignore_case(option, "type")) {
			if (!is_client_type(value)) {
				c.scratch.text.assign("Unknown client type '").append(c_string_prefix(value, 128)).append("'");
				c.reply.error(c.scratch.text);
				return;
			}
			filter.type = value;
		} else if (equals_ignore_case(option, "maxage")) {
			if (!parse_canonical_int64(value, &number)) {
				c.reply.error("value is not an integer or out of range");
				return;
			}
			filter.max_age = number;
		} else if (equals_ignore_case(option, "skipme")) {
			if (!equals_ignore_case(value, "yes") && !equals_ignore_case(value, "no")) {
				reply_syntax_error(c);
				return;
			}
			filter.skip_me = equals_ignore_case(value, "yes");
		} else {
			reply_syntax_error(c);
			return;
		}
	}
	const Session &me = c.session;
	int64_t now = me.last_request_at_ms;
	std::vector<uint64_t> doomed;
	bool kill_me = false;
	for (const Session *s : visible_sessions(c)) {
		std::string_view user = s->role ? std::string_view(s->role->name) : std::string_view("default");
		bool same_role = s->role && me.role && s->role->id == me.role->id;
		if (!is_of_type(*s, filter.type) || !same_role || (filter.skip_me && s == &me) || (filter.id && *filter.id != s->id) ||
			(filter.addr && *filter.addr != s->peer_address) || (filter.laddr && *filter.laddr != s->local_address) ||
			(filter.user && *filter.user != user) ||
			(filter.max_age && (now - s->connected_at_ms) / 1000 <= *filter.max_age))
			continue;
		if (s == &me)
			kill_me = true;
		else
			doomed.push_back(s->id);
	}
	for (uint64_t id : doomed)
		c.clients->close_session(id);
	c.session.close_after_reply = c.session.close_after_reply || kill_me;
	size_t killed = doomed.size() + (kill_me ? 1 : 0);
	if (!old_style)
		c.reply.integer(int64_t(killed));
	else if (killed == 0)
		c.reply.error("No such client");
	else
		c.reply.ok();
}

/* node-redis v6 asks for Redis Enterprise's maintenance push notifications at connect. There
 * is never maintenance to announce, so accepting is both true and what clients expect. */
void client_maint_notifications_command(CommandContext &c)
{
	std::string_view mode = c.arg(2);
	if (!equals_ignore_case(mode, "ON") && !equals_ignore_case(mode, "OFF")) {
		reply_syntax_error(c);
		return;
	}
	c.reply.ok();
}

} // namespace local_cache::resp
