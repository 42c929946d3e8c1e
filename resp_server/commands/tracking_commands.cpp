/*
 * tracking_commands.cpp — server-assisted client-side caching's commands, as Redis 7.2 answers
 * them: CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (networking.c's clientCommand), and
 * the Pub/Sub commands a RESP2 client needs to receive invalidations through REDIRECT
 * (pubsub.c): SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, with PING's subscribed-mode
 * reply. They change the Session and tell the worker's TrackingTable (client_tracking.h); the
 * event layer delivers the invalidations. No PUBLISH: only __redis__:invalidate ever carries a
 * message, and only the server sends it.
 */
#include "resp_server/commands/command_context.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace local_cache::resp {

namespace {

constexpr std::string_view kInvalidateChannel = "__redis__:invalidate";

/* A REDIRECT target must exist when tracking starts (it may go away later, as in Redis). */
bool client_exists(CommandContext &c, uint64_t id)
{
	if (id == c.session.id)
		return true;
	return c.clients != nullptr && c.clients->client_exists(id);
}

/* Redis's stringCheckPrefix: two prefixes overlap when one starts the other; a key could then
 * be announced twice. */
bool prefixes_overlap(std::string_view a, std::string_view b)
{
	size_t common = std::min(a.size(), b.size());
	return a.compare(0, common, b.substr(0, common)) == 0;
}

/* Redis's checkPrefixCollisionsOrReply: none of the new prefixes may overlap one the
 * connection has or another new one. */
bool prefixes_acceptable(CommandContext &c, const std::vector<std::string_view> &prefixes)
{
	std::string &message = c.scratch.text;
	for (size_t i = 0; i < prefixes.size(); i++) {
		for (const std::string &existing : c.session.tracking.prefixes) {
			if (prefixes_overlap(existing, prefixes[i])) {
				message.assign("Prefix '").append(c_string(prefixes[i]));
				message.append("' overlaps with an existing prefix '").append(c_string(existing));
				message.append("'. Prefixes for a single client must not overlap.");
				c.reply.error(message);
				return false;
			}
		}
		for (size_t j = i + 1; j < prefixes.size(); j++) {
			if (prefixes_overlap(prefixes[i], prefixes[j])) {
				message.assign("Prefix '").append(c_string(prefixes[i]));
				message.append("' overlaps with another provided prefix '").append(c_string(prefixes[j]));
				message.append("'. Prefixes for a single client must not overlap.");
				c.reply.error(message);
				return false;
			}
		}
	}
	return true;
}

struct TrackingOptions {
	uint64_t redirect = 0;
	bool bcast = false;
	bool optin = false;
	bool optout = false;
	bool noloop = false;
	std::vector<std::string_view> prefixes;
};

/* CLIENT TRACKING's options after ON|OFF, checked in Redis's order; false with the error
 * replied. */
bool parse_tracking_options(CommandContext &c, TrackingOptions &options)
{
	for (size_t j = 3; j < c.argc(); j++) {
		bool more = j + 1 < c.argc();
		std::string_view option = c.arg(j);
		if (equals_ignore_case(option, "redirect") && more) {
			j++;
			if (options.redirect != 0) {
				c.reply.error("A client can only redirect to a single other client");
				return false;
			}
			int64_t id = 0;
			if (!parse_canonical_int64(c.arg(j), &id)) {
				c.reply.error("value is not an integer or out of range");
				return false;
			}
			if (id <= 0 || !client_exists(c, uint64_t(id))) {
				c.reply.error("The client ID you want redirect to does not exist");
				return false;
			}
			options.redirect = uint64_t(id);
		} else if (equals_ignore_case(option, "bcast")) {
			options.bcast = true;
		} else if (equals_ignore_case(option, "optin")) {
			options.optin = true;
		} else if (equals_ignore_case(option, "optout")) {
			options.optout = true;
		} else if (equals_ignore_case(option, "noloop")) {
			options.noloop = true;
		} else if (equals_ignore_case(option, "prefix") && more) {
			options.prefixes.push_back(c.arg(++j));
		} else {
			c.reply.error("syntax error");
			return false;
		}
	}
	return true;
}

/* CLIENT TRACKING ON: the options must agree with each other and with the mode already on. */
bool tracking_options_acceptable(CommandContext &c, const TrackingOptions &options)
{
	const TrackingMode &now = c.session.tracking;
	if (!options.bcast && !options.prefixes.empty()) {
		c.reply.error("PREFIX option requires BCAST mode to be enabled");
		return false;
	}
	if (now.on && now.bcast != options.bcast) {
		c.reply.error("You can't switch BCAST mode on/off before disabling tracking for this client, and then "
					  "re-enabling it with a different mode.");
		return false;
	}
	if (options.bcast && (options.optin || options.optout)) {
		c.reply.error("OPTIN and OPTOUT are not compatible with BCAST");
		return false;
	}
	if (options.optin && options.optout) {
		c.reply.error("You can't specify both OPTIN mode and OPTOUT mode");
		return false;
	}
	if ((options.optin && now.optout) || (options.optout && now.optin)) {
		c.reply.error("You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then "
					  "re-enabling it with a different mode.");
		return false;
	}
	return !options.bcast || prefixes_acceptable(c, options.prefixes);
}

/* A Pub/Sub reply: *3 in RESP2, the push >3 in RESP3 (Redis's addReplyPubsub*). */
void pubsub_reply(CommandContext &c, std::string_view kind, const std::string_view *channel)
{
	if (c.session.protocol >= 3)
		c.reply.buffer().append(">3\r\n", 4);
	else
		c.reply.array(3);
	c.reply.bulk(kind);
	if (channel != nullptr)
		c.reply.bulk(*channel);
	else
		c.reply.null();
	c.reply.integer(int64_t(c.session.channels.size() + c.session.patterns.size()));
}

bool is_pattern_command(const CommandContext &c)
{
	return c.command.full_name[0] == 'p';
}

void note_invalidate_subscription(Session &session)
{
	session.tracking.subscribed_invalidate =
		std::find(session.channels.begin(), session.channels.end(), kInvalidateChannel) != session.channels.end();
}

/* Whether the TRACKINGINFO / CLIENT LIST connection's REDIRECT target is gone. */
bool redirect_broken(const Session &s, const Session &caller, ClientDirectory *clients)
{
	if (!s.tracking.on || s.tracking.redirect == 0 || s.tracking.redirect == s.id || s.tracking.redirect == caller.id)
		return false;
	return clients == nullptr || !clients->client_exists(s.tracking.redirect);
}

} // namespace

/* CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP] */
void client_tracking_command(CommandContext &c)
{
	TrackingOptions options;
	if (!parse_tracking_options(c, options))
		return;
	TrackingMode &mode = c.session.tracking;
	if (equals_ignore_case(c.arg(2), "on")) {
		if (!tracking_options_acceptable(c, options))
			return;
		/* As Redis's enableTracking: the flags and the redirect are replaced, the prefixes
		 * added to those the connection has (BCAST alone asks for every key: the prefix ""),
		 * CLIENT CACHING's flag is kept. */
		TrackingMode next = mode;
		next.on = true;
		next.redirect = options.redirect;
		next.bcast = options.bcast;
		next.optin = options.optin;
		next.optout = options.optout;
		next.noloop = options.noloop;
		if (options.bcast && options.prefixes.empty())
			options.prefixes.push_back(std::string_view(""));
		for (std::string_view prefix : options.prefixes) {
			if (std::find(next.prefixes.begin(), next.prefixes.end(), prefix) == next.prefixes.end())
				next.prefixes.emplace_back(prefix);
		}
		mode = std::move(next);
		c.tracking.session_started_tracking(c.session);
	} else if (equals_ignore_case(c.arg(2), "off")) {
		stop_tracking(c);
	} else {
		c.reply.error("syntax error");
		return;
	}
	c.reply.ok();
}

void stop_tracking(CommandContext &c)
{
	TrackingMode &mode = c.session.tracking;
	if (mode.on)
		c.tracking.session_stopped_tracking(c.session.id);
	bool subscribed_invalidate = mode.subscribed_invalidate;
	mode = TrackingMode();
	mode.subscribed_invalidate = subscribed_invalidate;
}

void client_caching_command(CommandContext &c)
{
	TrackingMode &mode = c.session.tracking;
	if (!mode.on) {
		c.reply.error("CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT "
					  "mode enabled");
		return;
	}
	std::string_view choice = c.arg(2);
	if (equals_ignore_case(choice, "yes")) {
		if (!mode.optin) {
			c.reply.error("CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
			return;
		}
		mode.caching_yes = true;
	} else if (equals_ignore_case(choice, "no")) {
		if (!mode.optout) {
			c.reply.error("CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
			return;
		}
		mode.caching_no = true;
	} else {
		c.reply.error("syntax error");
		return;
	}
	c.reply.ok();
}

void client_getredir_command(CommandContext &c)
{
	const TrackingMode &mode = c.session.tracking;
	c.reply.integer(mode.on ? int64_t(mode.redirect) : -1);
}

void client_trackinginfo_command(CommandContext &c)
{
	const TrackingMode &mode = c.session.tracking;
	std::string_view flags[8];
	size_t count = 0;
	flags[count++] = mode.on ? "on" : "off";
	if (mode.bcast)
		flags[count++] = "bcast";
	if (mode.optin) {
		flags[count++] = "optin";
		if (mode.caching_yes)
			flags[count++] = "caching-yes";
	}
	if (mode.optout) {
		flags[count++] = "optout";
		if (mode.caching_no)
			flags[count++] = "caching-no";
	}
	if (mode.noloop)
		flags[count++] = "noloop";
	if (redirect_broken(c.session, c.session, c.clients))
		flags[count++] = "broken_redirect";

	c.reply.map(3);
	c.reply.bulk("flags");
	c.reply.set(count);
	for (size_t i = 0; i < count; i++)
		c.reply.bulk(flags[i]);
	c.reply.bulk("redirect");
	c.reply.integer(mode.on ? int64_t(mode.redirect) : -1);
	c.reply.bulk("prefixes");
	/* In Redis's order: its prefix tree's, sorted by bytes. */
	std::vector<std::string_view> prefixes(mode.prefixes.begin(), mode.prefixes.end());
	std::sort(prefixes.begin(), prefixes.end());
	c.reply.array(prefixes.size());
	for (std::string_view prefix : prefixes)
		c.reply.bulk(prefix);
}

/* ---- Pub/Sub ---- */

/* SUBSCRIBE channel ... and PSUBSCRIBE pattern ...: one reply per argument. */
void subscribe_command(CommandContext &c)
{
	bool patterns = is_pattern_command(c);
	std::vector<std::string> &names = patterns ? c.session.patterns : c.session.channels;
	for (size_t i = 1; i < c.argc(); i++) {
		std::string_view name = c.arg(i);
		if (std::find(names.begin(), names.end(), name) == names.end())
			names.emplace_back(name);
		pubsub_reply(c, patterns ? "psubscribe" : "subscribe", &name);
	}
	note_invalidate_subscription(c.session);
}

/* UNSUBSCRIBE [channel ...] and PUNSUBSCRIBE [pattern ...]: one reply per argument, or per
 * subscription when none is named, or one with a nil name when there was none. */
void unsubscribe_command(CommandContext &c)
{
	bool patterns = is_pattern_command(c);
	std::string_view kind = patterns ? "punsubscribe" : "unsubscribe";
	std::vector<std::string> &names = patterns ? c.session.patterns : c.session.channels;
	if (c.argc() == 1) {
		if (names.empty())
			pubsub_reply(c, kind, nullptr);
		while (!names.empty()) {
			std::string name = std::move(names.front());
			names.erase(names.begin());
			std::string_view view = name;
			pubsub_reply(c, kind, &view);
		}
	} else {
		for (size_t i = 1; i < c.argc(); i++) {
			std::string_view name = c.arg(i);
			auto found = std::find(names.begin(), names.end(), name);
			if (found != names.end())
				names.erase(found);
			pubsub_reply(c, kind, &name);
		}
	}
	note_invalidate_subscription(c.session);
}

void unsubscribe_all(Session &session)
{
	std::vector<std::string>().swap(session.channels);
	std::vector<std::string>().swap(session.patterns);
	session.tracking.subscribed_invalidate = false;
}

bool ping_subscribed(CommandContext &c)
{
	if (c.session.protocol != 2 || !c.session.subscribed())
		return false;
	c.reply.array(2);
	c.reply.bulk("pong");
	c.reply.bulk(c.argc() == 2 ? c.arg(1) : std::string_view(""));
	return true;
}

void append_client_flags(std::string &line, const Session &s, const Session &caller, ClientDirectory *clients)
{
	line.append(" flags=");
	size_t start = line.size();
	if (s.subscribed())
		line += 'P';
	if (s.multi.active)
		line += 'x';
	if (s.tracking.on)
		line += 't';
	if (redirect_broken(s, caller, clients))
		line += 'R';
	if (s.tracking.bcast)
		line += 'B';
	if (line.size() == start)
		line += 'N';
	line.append(" db=0 sub=");
	append_number(line, s.channels.size());
	line.append(" psub=");
	append_number(line, s.patterns.size());
	line.append(" ssub=0");
}

} // namespace local_cache::resp
