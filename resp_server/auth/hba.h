/*
 * hba.h — pg_hba.conf as a RESP login reads it: the file parsed by PostgreSQL's own parser
 * (tokenize_auth_file, parse_hba_line), and the first line that applies to a TCP login without
 * SSL or GSSAPI to the RESP database, from the client's address, as a role.
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
	const HbaLine *match(const sockaddr_storage &client, const char *database, const char *role,
						 Oid roleid) const;

private:
	MemoryContext context_ = nullptr;
	List *lines_ = NIL;
};

} // namespace local_cache::resp
