/*
 * hba.cpp — which pg_hba.conf line applies to a RESP login. The matching follows
 * PostgreSQL 15's check_hba for a TCP connection without SSL or GSSAPI encryption: "local",
 * "hostssl" and "hostgssenc" lines never apply; "host", "hostnossl" and "hostnogssenc" lines
 * apply by address (mask, all, samehost, samenet), database (all, sameuser, samerole, names)
 * and role (all, +group, names). The first line that applies decides.
 *
 * The postmaster's parsed copy of the file is not usable in a background worker (it lives in
 * PostmasterContext, which workers free), so the worker parses the file itself, with
 * PostgreSQL's parser, into a context of its own.
 */
#include "extension/pg.h"

#include "resp_server/auth/hba.h"

extern "C" {
#include "libpq/ifaddr.h"
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

void HbaRules::load()
{
	FILE *file = AllocateFile(HbaFileName, "r");
	if (file == nullptr) {
		ereport(LOG, (errcode_for_file_access(),
					  errmsg("local_cache RESP: could not open configuration file \"%s\": %m; keeping the rules read before",
							 HbaFileName)));
		return;
	}
	List *tokenized = NIL;
	MemoryContext tokens = tokenize_auth_file(HbaFileName, file, &tokenized, LOG);
	FreeFile(file);

	MemoryContext context = AllocSetContextCreate(TopMemoryContext, "local_cache RESP pg_hba.conf", ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(context);
	List *lines = NIL;
	bool ok = true;
	ListCell *cell;
	foreach (cell, tokenized) {
		TokenizedAuthLine *tokenized_line = static_cast<TokenizedAuthLine *>(lfirst(cell));
		HbaLine *line = tokenized_line->err_msg == nullptr ? parse_hba_line(tokenized_line, LOG) : nullptr;
		if (line == nullptr) {
			ok = false;
			continue;
		}
		lines = lappend(lines, line);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tokens);
	if (!ok) {
		ereport(LOG, (errmsg("local_cache RESP: \"%s\" has errors; keeping the rules read before", HbaFileName)));
		MemoryContextDelete(context);
		return;
	}
	if (context_ != nullptr)
		MemoryContextDelete(context_);
	context_ = context;
	lines_ = lines;
}

const HbaLine *HbaRules::match(const sockaddr_storage &client, const char *database, const char *role,
							   Oid roleid) const
{
	ListCell *cell;
	foreach (cell, lines_) {
		const HbaLine *line = static_cast<const HbaLine *>(lfirst(cell));
		if (line->conntype == ctLocal || line->conntype == ctHostSSL || line->conntype == ctHostGSS)
			continue;
		if (address_matches(line, client) && database_matches(line->databases, database, role, roleid) &&
			role_matches(line->roles, role, roleid))
			return line;
	}
	return nullptr;
}

} // namespace local_cache::resp
