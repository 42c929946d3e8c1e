/*
 * logins.h — RESP logins (the commands' Logins interface, commands/data_source.h, on
 * PostgreSQL) as strict as a PostgreSQL login to the RESP database from the same address: the pg_hba.conf line that applies (reject, trust, password, md5, scram-sha-256, and
 * on TLS connections cert and clientcert=; other methods are refused with a clear error), the role's LOGIN and VALID UNTIL, and its
 * CONNECTION LIMIT, then the database's rules (session_limits.h: ALLOW_CONNECTIONS, CONNECT,
 * its CONNECTION LIMIT), PostgreSQL backends and RESP sessions counted together.
 *
 * Password checks run on a thread of their own (password_check.h), so the event loop keeps
 * serving other connections; they cost the same whether the role exists or not. After a
 * failure, the next attempt of that connection waits (50 ms, doubling to 5 s), and a user name
 * with more than 20 failures in 10 s from one client address waits 50 ms more there for each
 * further one (up to 5 s): other users at that address (one NAT, proxy or application host) are
 * not slowed.
 * Successful checks are remembered (as keyed digests, never the password) until the role's
 * stored password changes, for the pg_hba.conf method they passed. Failed logins are logged as
 * PostgreSQL logs them (with the address and the pg_hba.conf line), those of an address past
 * 20 failures in 10 s not; with log_connections, successful ones too.
 */
#pragma once

#include "extension/pg.h"

#include "resp_server/commands/data_source.h"
#include "resp_server/auth/hba.h"
#include "resp_server/auth/password_check.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace local_cache::resp {

/* Logins (commands/data_source.h) on PostgreSQL: one per worker and per write worker. */
class Authenticator final : public Logins {
public:
	Authenticator();
	~Authenticator();

	/* Reads pg_hba.conf again (at start and on SIGHUP). */
	void load_rules();

	/* AUTH [<user>] <password>: login() as the user, or as local_cache.resp_role without one
	 * (or for "default"). */
	AuthResult authenticate(const Session &session, std::optional<std::string_view> user,
							std::string_view password) override;

	/* A verified TLS client certificate's role (certificate_login), else local_cache.resp_role
	 * (default_login), else none. */
	std::optional<AuthenticatedRole> default_role(const Session &session) override;

	/* The connection closed: its check is dropped and its session no longer counts. */
	void session_ended(const Session &session) override;

	/* Failed logins in a window (logins.cpp: the back-off and the log limit). */
	struct Failures {
		uint32_t count = 0;
		int64_t last_ms = 0;
		uint32_t unlogged = 0; /* failures of an address past kSourceFailuresAllowed, not logged */
	};

private:
	struct Pending;

	/* AUTH <user> <password> of a connection. Pending: ask again later with the same
	 * credentials (the connection's request waits, the loop goes on). */
	AuthResult login(const Session &session, std::string_view user, std::string_view password);

	/* The role an unauthenticated connection acts as (local_cache.resp_role): granted unless
	 * pg_hba.conf rejects it from the client's address or its connection limit is reached. */
	AuthResult default_login(const Session &session, const char *role_name);

	/* A TLS connection whose verified client certificate's Common Name is a role with a `cert`
	 * line of pg_hba.conf (its map= through pg_ident.conf): logged in as that role, no AUTH.
	 * Denied (without a log line) when no `cert` line applies. */
	AuthResult certificate_login(const Session &session);

	AuthResult finish(const Session &session, Pending &pending, bool password_ok);
	AuthResult grant(const Session &session, const Pending &pending);
	/* A `cert` line, or clientcert= on another: whether the connection's certificate passes. */
	bool certificate_accepted(const Session &session, const Pending &pending);
	AuthResult certificate_grant(const Session &session, const Pending &pending);
	/* Counts a failed login of `user` for the back-off; whether to log it (false past the
	 * per-address limit, where the log says once that the next ones are not logged). */
	bool note_failure(const Session &session, std::string_view user);
	/* When the connection's next password check of `user` may run. */
	int64_t backoff_until(const Session &session, std::string_view user) const;
	std::string digest(std::string_view a, std::string_view b, std::string_view c) const;

	HbaRules rules_;
	PasswordChecker checker_;
	std::unordered_map<uint64_t, std::unique_ptr<Pending>> pending_;
	std::unordered_map<uint64_t, Failures> session_failures_;
	std::unordered_map<std::string, Failures> attempt_failures_; /* by address and user name */
	std::unordered_map<std::string, Failures> address_failures_; /* by address: the log limit */
	std::unordered_set<std::string> verified_;
	uint64_t next_ticket_ = 1;
	unsigned char key_[32];
};

} // namespace local_cache::resp
