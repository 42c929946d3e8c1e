/*
 * hba.h — pg_hba.conf as a RESP login reads it: the file parsed by PostgreSQL's own parser
 * (tokenize_auth_file, parse_hba_line), and the first line that applies to a TCP login without
 * GSSAPI, with or without TLS, to the RESP database, from the client's address, as a role; and
 * pg_ident.conf's maps for certificate logins.
 */
#pragma once

#include "extension/pg.h"

extern "C" {
#include "libpq/hba.h"
}

#include <sys/socket.h>

namespace local_cache::resp {

class HbaRules {
public:
	/* Reads pg_hba.conf (at start and on SIGHUP); keeps the previous rules, and says so in the
	 * log, if the file cannot be read or has an error — as the postmaster does. */
	void load();

	/* The line that applies, or nullptr: no line matches, which rejects. In a transaction
	 * (group membership is read from the catalogs). A line this server cannot evaluate (a host
	 * name, which needs DNS) is returned as it is: the caller refuses it. */
	const HbaLine *match(const sockaddr_storage &client, bool tls, const char *database, const char *role,
						 Oid roleid) const;

	/* Whether a verified client certificate with this Common Name may log in as `role` by the
	 * line's `cert` method: through its pg_ident.conf map, or by the same name. */
	bool certificate_names_role(const HbaLine *line, const char *role, const char *common_name) const;

private:
	void load_user_maps();
	static void free_user_maps(List *lines, MemoryContext context);

	MemoryContext context_ = nullptr;
	List *lines_ = NIL;
	MemoryContext ident_context_ = nullptr;
	List *ident_lines_ = NIL; /* IdentLine *, pg_ident.conf's lines */
};

} // namespace local_cache::resp
