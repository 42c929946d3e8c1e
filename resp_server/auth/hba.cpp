/*
 * hba.cpp — which pg_hba.conf line applies to a RESP login. The matching follows
 * PostgreSQL 15's check_hba for a TCP connection without GSSAPI encryption, with or without
 * TLS: "local" and "hostgssenc" lines never apply; "hostssl" lines only to TLS connections and
 * "hostnossl" lines only to plaintext ones (whatever PostgreSQL's own `ssl` says: the RESP port
 * has its own TLS); "host" and "hostnogssenc" lines to both. A line applies by address (mask,
 * all, samehost, samenet), database (all, sameuser, samerole, names) and role (all, +group,
 * names). The first line that applies decides.
 *
 * The postmaster's parsed copies of pg_hba.conf and pg_ident.conf are not usable in a background
 * worker (they live in PostmasterContext, which workers free), so the worker parses the files
 * itself, with PostgreSQL's parser, into contexts of its own.
 */
#include "extension/pg.h"

#include "resp_server/auth/hba.h"

extern "C" {
#include "lib/stringinfo.h"
#include "libpq/ifaddr.h"
#include "postmaster/postmaster.h"
#include "mb/pg_wchar.h"
#include "regex/regex.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/memutils.h"
}

#include <cstring>

namespace local_cache::resp {

namespace {

bool token_is_keyword(const AuthToken *token, const char *keyword)
{
	return !token->quoted && strcmp(token->string, keyword) == 0;
}

bool is_member(Oid roleid, const char *group)
{
	if (!OidIsValid(roleid))
		return false;
	Oid groupid = get_role_oid(group, true);
	return OidIsValid(groupid) && is_member_of_role_nosuper(roleid, groupid);
}

bool database_matches(const List *tokens, const char *database, const char *role, Oid roleid)
{
	ListCell *cell;
	foreach (cell, tokens) {
		const AuthToken *token = static_cast<const AuthToken *>(lfirst(cell));
		if (token_is_keyword(token, "all"))
			return true;
		if (token_is_keyword(token, "sameuser")) {
			if (strcmp(database, role) == 0)
				return true;
		} else if (token_is_keyword(token, "samegroup") || token_is_keyword(token, "samerole")) {
			if (is_member(roleid, database))
				return true;
		} else if (token_is_keyword(token, "replication")) {
			continue; /* only for walsenders */
		} else if (strcmp(token->string, database) == 0) {
			return true;
		}
	}
	return false;
}

bool role_matches(const List *tokens, const char *role, Oid roleid)
{
	ListCell *cell;
	foreach (cell, tokens) {
		const AuthToken *token = static_cast<const AuthToken *>(lfirst(cell));
		if (!token->quoted && token->string[0] == '+') {
			if (is_member(roleid, token->string + 1))
				return true;
		} else if (strcmp(token->string, role) == 0 || token_is_keyword(token, "all")) {
			return true;
		}
	}
	return false;
}

bool address_in(const sockaddr_storage &client, const sockaddr *address, const sockaddr *mask)
{
	return client.ss_family == address->sa_family &&
		pg_range_sockaddr(&client, reinterpret_cast<const sockaddr_storage *>(address),
						  reinterpret_cast<const sockaddr_storage *>(mask));
}

struct InterfaceCheck {
	const sockaddr_storage *client;
	IPCompareMethod method;
	bool found;
};

void check_interface(sockaddr *address, sockaddr *netmask, void *data)
{
	InterfaceCheck *check = static_cast<InterfaceCheck *>(data);
	if (check->found)
		return;
	if (check->method == ipCmpSameHost) {
		sockaddr_storage all_ones;
		pg_sockaddr_cidr_mask(&all_ones, nullptr, address->sa_family);
		check->found = address_in(*check->client, address, reinterpret_cast<sockaddr *>(&all_ones));
	} else {
		check->found = address_in(*check->client, address, netmask);
	}
}

bool address_matches(const HbaLine *line, const sockaddr_storage &client)
{
	switch (line->ip_cmp_method) {
	case ipCmpAll:
		return true;
	case ipCmpMask:
		/* A host name needs DNS lookups the loop cannot wait for: such a line is returned as
		 * applying, and the caller refuses it. */
		return line->hostname != nullptr ||
			address_in(client, reinterpret_cast<const sockaddr *>(&line->addr),
					   reinterpret_cast<const sockaddr *>(&line->mask));
	case ipCmpSameHost:
	case ipCmpSameNet: {
		InterfaceCheck check = {&client, line->ip_cmp_method, false};
		return pg_foreach_ifaddr(check_interface, &check) == 0 && check.found;
	}
	}
	return false;
}

} // namespace

namespace {

/*
 * Reads `file_name` with PostgreSQL's tokenizer and `parse_line` (parse_hba_line or
 * parse_ident_line) into a new context: its lines, or false (logged, nothing kept) when the file
 * cannot be read or a line has an error, as the postmaster keeps its rules then. `discard` frees
 * what parsed lines hold outside the context.
 */
template <typename ParseLine, typename Discard>
bool parse_auth_file(const char *file_name, ParseLine parse_line, Discard discard, MemoryContext *context_out,
					 List **lines_out)
{
	FILE *file = AllocateFile(file_name, "r");
	if (file == nullptr) {
		ereport(LOG, (errcode_for_file_access(),
					  errmsg("local_cache RESP: could not open configuration file \"%s\": %m; keeping the one read before",
							 file_name)));
		return false;
	}
	List *tokenized = NIL;
	MemoryContext tokens = tokenize_auth_file(file_name, file, &tokenized, LOG);
	FreeFile(file);
	MemoryContext context = AllocSetContextCreate(TopMemoryContext, "local_cache RESP authentication file",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(context);
	List *lines = NIL;
	bool ok = true;
	ListCell *cell;
	foreach (cell, tokenized) {
		TokenizedAuthLine *tokenized_line = static_cast<TokenizedAuthLine *>(lfirst(cell));
		void *line = tokenized_line->err_msg == nullptr ? parse_line(tokenized_line, LOG) : nullptr;
		if (line == nullptr) {
			ok = false;
			continue;
		}
		lines = lappend(lines, line);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tokens);
	if (!ok) {
		discard(lines, context);
		ereport(LOG, (errmsg("local_cache RESP: \"%s\" has errors; keeping the one read before", file_name)));
		return false;
	}
	*context_out = context;
	*lines_out = lines;
	return true;
}

void discard_hba_lines(List *, MemoryContext context)
{
	MemoryContextDelete(context);
}

} // namespace

void HbaRules::load()
{
	MemoryContext context;
	List *lines;
	/* parse_hba_line logs that a hostssl line "cannot match" while PostgreSQL's own ssl is off;
	 * the RESP port's TLS is its own (local_cache.resp_tls), where such lines do match. */
	bool postgres_ssl = EnableSSL;
	EnableSSL = true;
	bool parsed = parse_auth_file(HbaFileName, parse_hba_line, discard_hba_lines, &context, &lines);
	EnableSSL = postgres_ssl;
	if (parsed) {
		if (context_ != nullptr)
			MemoryContextDelete(context_);
		context_ = context;
		lines_ = lines;
	}
	load_user_maps();
}

void HbaRules::load_user_maps()
{
	/* PostgreSQL's load_ident() cannot be used here: it replaces the postmaster's parsed copy,
	 * which this process freed with PostmasterContext. The lines are parsed by its
	 * parse_ident_line() all the same (which compiles their regular expressions). */
	MemoryContext context;
	List *lines;
	if (!parse_auth_file(IdentFileName, parse_ident_line, free_user_maps, &context, &lines))
		return;
	free_user_maps(ident_lines_, ident_context_);
	ident_context_ = context;
	ident_lines_ = lines;
}

void HbaRules::free_user_maps(List *lines, MemoryContext context)
{
	ListCell *cell;
	foreach (cell, lines) {
		IdentLine *line = static_cast<IdentLine *>(lfirst(cell));
		if (line->ident_user[0] == '/')
			pg_regfree(&line->re);
	}
	if (context != nullptr)
		MemoryContextDelete(context);
}

namespace {

bool same_name(const char *a, const char *b, bool case_insensitive)
{
	return case_insensitive ? pg_strcasecmp(a, b) == 0 : strcmp(a, b) == 0;
}

/* Whether pg_ident.conf line `line` lets `certificate_name` log in as `role`: PostgreSQL 15's
 * rules (a system name starting with '/' is a regular expression whose first group replaces
 * \1 in the role). */
bool map_line_allows(const IdentLine *line, const char *role, const char *certificate_name, bool case_insensitive)
{
	if (line->ident_user[0] != '/')
		return same_name(line->pg_role, role, case_insensitive) &&
			same_name(line->ident_user, certificate_name, case_insensitive);
	size_t length = strlen(certificate_name);
	pg_wchar *wide = static_cast<pg_wchar *>(palloc((length + 1) * sizeof(pg_wchar)));
	int wide_length = pg_mb2wchar_with_len(certificate_name, wide, int(length));
	regmatch_t matches[2];
	int result = pg_regexec(const_cast<regex_t *>(&line->re), wide, wide_length, 0, nullptr, 2, matches, 0);
	pfree(wide);
	if (result != 0)
		return false;
	const char *group = strstr(line->pg_role, "\\1");
	if (group == nullptr)
		return same_name(line->pg_role, role, case_insensitive);
	if (matches[1].rm_so < 0) {
		ereport(LOG, (errmsg("regular expression \"%s\" has no subexpressions as requested by backreference in \"%s\"",
							 line->ident_user + 1, line->pg_role)));
		return false;
	}
	StringInfoData expected;
	initStringInfo(&expected);
	appendBinaryStringInfo(&expected, line->pg_role, int(group - line->pg_role));
	appendBinaryStringInfo(&expected, certificate_name + matches[1].rm_so, int(matches[1].rm_eo - matches[1].rm_so));
	appendStringInfoString(&expected, group + 2);
	bool allowed = same_name(expected.data, role, case_insensitive);
	pfree(expected.data);
	return allowed;
}

} // namespace

bool HbaRules::certificate_names_role(const HbaLine *line, const char *role, const char *common_name) const
{
	/* As PostgreSQL's certificate authentication: through the line's map= or by the same name,
	 * a mismatch logged as PostgreSQL logs it. */
	if (common_name[0] == '\0')
		return false;
	if (line->usermap == nullptr || line->usermap[0] == '\0') {
		if (strcmp(role, common_name) == 0)
			return true;
		ereport(LOG, (errmsg("provided user name (%s) and authenticated user name (%s) do not match", role,
							 common_name)));
		return false;
	}
	ListCell *cell;
	foreach (cell, ident_lines_) {
		const IdentLine *map_line = static_cast<const IdentLine *>(lfirst(cell));
		if (strcmp(map_line->usermap, line->usermap) == 0 && map_line_allows(map_line, role, common_name, false))
			return true;
	}
	ereport(LOG, (errmsg("no match in usermap \"%s\" for user \"%s\" authenticated as \"%s\"", line->usermap, role,
						 common_name)));
	return false;
}

const HbaLine *HbaRules::match(const sockaddr_storage &client, bool tls, const char *database, const char *role,
							   Oid roleid) const
{
	ListCell *cell;
	foreach (cell, lines_) {
		const HbaLine *line = static_cast<const HbaLine *>(lfirst(cell));
		if (line->conntype == ctLocal || line->conntype == ctHostGSS || (line->conntype == ctHostSSL && !tls) ||
			(line->conntype == ctHostNoSSL && tls))
			continue;
		if (address_matches(line, client) && database_matches(line->databases, database, role, roleid) &&
			role_matches(line->roles, role, roleid))
			return line;
	}
	return nullptr;
}

} // namespace local_cache::resp
