/*
 * tls_server.cpp — TLS on a worker's RESP port (local_cache.resp_tls): the context built from
 * the settings, and the bound on failed handshakes from one address.
 *
 * The files are PostgreSQL's own (ssl_cert_file, ssl_key_file, ssl_ca_file: relative to the data
 * directory, the key held to PostgreSQL's permission rule) unless local_cache.resp_tls_*_file
 * name others, and so are the protocol range (ssl_min/max_protocol_version, at least TLSv1.2)
 * and ssl_ciphers. As the postmaster does with its own, a reload builds a new context and a
 * context that fails to load keeps the one before; connections keep the context they began
 * with. A handshake costs the server far more than the client, so an address whose handshakes
 * keep failing (kTlsFailuresAllowed in kTlsFailureWindowMs) is closed at once until the window
 * ends, as failed AUTHs from one address back off.
 */
#include "extension/pg.h"

#include "resp_server/net/server.h"
#include "resp_server/pg/settings.h"

extern "C" {
#include "utils/guc.h"
}

namespace local_cache::resp {

namespace {

constexpr uint32_t kTlsFailuresAllowed = 20;
constexpr int64_t kTlsFailureWindowMs = 10 * 1000;
constexpr size_t kTlsFailureAddressesKept = 10000;

std::string setting(const char *own, const char *postgres_setting)
{
	if (own != nullptr && own[0] != '\0')
		return own;
	const char *value = GetConfigOption(postgres_setting, true, false);
	return value != nullptr ? value : "";
}

TlsConfig tls_config()
{
	TlsConfig config;
	config.cert_file = setting(local_cache_resp_tls_cert_file, "ssl_cert_file");
	config.key_file = setting(local_cache_resp_tls_key_file, "ssl_key_file");
	config.ca_file = setting(local_cache_resp_tls_ca_file, "ssl_ca_file");
	config.ciphers = setting(nullptr, "ssl_ciphers");
	/* PostgreSQL may allow TLS 1.0 and 1.1 for its own port; the RESP port starts at 1.2. */
	config.min_protocol = setting(nullptr, "ssl_min_protocol_version");
	if (tls_protocol_version(config.min_protocol) == 0)
		config.min_protocol = "TLSv1.2";
	config.max_protocol = setting(nullptr, "ssl_max_protocol_version");
	config.client_auth = local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_NO ? TlsClientAuth::No
					   : local_cache_resp_tls_auth_clients == RESP_TLS_AUTH_CLIENTS_YES ? TlsClientAuth::Yes
					   : TlsClientAuth::Optional;
	return config;
}

} // namespace

bool load_tls_context(Server *server)
{
	if (!local_cache_resp_tls)
		return true;
	std::string error;
	std::shared_ptr<TlsContext> context = TlsContext::load(tls_config(), &error);
	if (context == nullptr) {
		ereport(LOG, (errmsg("local_cache RESP worker %d: %s; %s", server->worker_number, error.c_str(),
							 server->tls != nullptr ? "keeping the TLS settings loaded before"
													: "not listening until a reload loads them")));
		return false;
	}
	server->tls = std::move(context);
	return true;
}

bool tls_handshake_allowed(Server *server, const Session &session)
{
	auto found = server->tls_failures.find(session.peer_host());
	return found == server->tls_failures.end() || found->second.count < kTlsFailuresAllowed ||
		now_ms() - found->second.window_start_ms >= kTlsFailureWindowMs;
}

void note_tls_handshake_failure(Server *server, const Session &session)
{
	if (server->tls_failures.size() >= kTlsFailureAddressesKept)
		forget_old_tls_failures(server);
	if (server->tls_failures.size() >= kTlsFailureAddressesKept)
		return;
	TlsFailures &failures = server->tls_failures[session.peer_host()];
	int64_t now = now_ms();
	if (now - failures.window_start_ms >= kTlsFailureWindowMs)
		failures = TlsFailures{0, now};
	failures.count++;
}

void forget_old_tls_failures(Server *server)
{
	int64_t now = now_ms();
	for (auto it = server->tls_failures.begin(); it != server->tls_failures.end();)
		it = now - it->second.window_start_ms >= kTlsFailureWindowMs ? server->tls_failures.erase(it) : std::next(it);
}

} // namespace local_cache::resp
