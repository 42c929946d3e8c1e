/*
 * session_limits.h — what a login to the RESP database must pass beyond its pg_hba.conf line
 * and its password, as InitPostgres checks it for a backend: the database accepts connections
 * (ALLOW_CONNECTIONS), the role has CONNECT on it, and neither the role's nor the database's
 * CONNECTION LIMIT is reached, counting PostgreSQL backends and RESP sessions together, both
 * ways: RESP logins (logins.cpp) count the backends, and a ClientAuthentication hook refuses a
 * PostgreSQL login that the RESP sessions leave no room for (PostgreSQL's own check counts
 * backends only).
 */
#pragma once

#include "extension/pg.h"

namespace local_cache::resp {

/* The RESP database's rules for one role, read in a transaction into plain data. */
struct DatabaseFacts {
	bool allows_connections; /* datallowconn */
	bool may_connect;        /* CONNECT privilege (or superuser) */
	int connection_limit;    /* datconnlimit, -1: none */
	int sessions;            /* its PostgreSQL backends (not background workers) and RESP sessions */
};

/* In a transaction: the facts for `role` logging in to the database the worker serves. */
void read_database_facts(Oid role, DatabaseFacts *facts);

/* PostgreSQL's refusal of that login (and its DETAIL, may be empty), or false when it may log
 * in; `superuser` skips what superusers skip. `counted` is 1 when this session is already
 * counted in facts.sessions (it logs in again), else 0. */
bool database_refuses(const DatabaseFacts &facts, bool superuser, int counted, const char *database,
					  const char **message, const char **detail);

/* From _PG_init, when the RESP server is configured: the hook for PostgreSQL logins. */
void install_session_limits_hook();

} // namespace local_cache::resp
