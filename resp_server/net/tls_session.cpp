/*
 * tls_session.cpp — TLS contexts and sessions on OpenSSL memory BIOs (tls_session.h).
 *
 * The context follows PostgreSQL's own server TLS (be-secure-openssl.c) where the two meet:
 * protocol versions and ciphers spelled as ssl_min_protocol_version and ssl_ciphers, the key
 * file's permission rule, server cipher preference, no session cache, no renegotiation.
 */
#include "resp_server/net/tls_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace local_cache::resp {

namespace {

/* OpenSSL's reason for the latest error of this thread, and the queue emptied. */
std::string openssl_reason()
{
	unsigned long code = ERR_get_error();
	ERR_clear_error();
	if (code == 0)
		return "no reason given by OpenSSL";
	char text[256];
	ERR_error_string_n(code, text, sizeof(text));
	/* "error:0A000086:SSL routines::certificate verify failed": keep the reason at the end. */
	const char *reason = strrchr(text, ':');
	return reason != nullptr && reason[1] != '\0' ? std::string(reason + 1) : std::string(text);
}

struct ContextOwner {
	SSL_CTX *context;
	~ContextOwner() { SSL_CTX_free(context); }
};

} // namespace

int tls_protocol_version(const std::string &name)
{
	if (name == "TLSv1.2")
		return TLS1_2_VERSION;
	if (name == "TLSv1.3")
		return TLS1_3_VERSION;
	return 0;
}

bool tls_key_file_safe(const std::string &path, std::string *error)
{
	struct stat st;
	if (stat(path.c_str(), &st) != 0) {
		*error = "could not access private key file \"" + path + "\": " + strerror(errno);
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		*error = "private key file \"" + path + "\" is not a regular file";
		return false;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		*error = "private key file \"" + path + "\" must be owned by the database user or root";
		return false;
	}
	if ((st.st_uid == geteuid() && (st.st_mode & (S_IRWXG | S_IRWXO))) ||
		(st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)))) {
		*error = "private key file \"" + path + "\" has group or world access (it must be u=rw (0600) or "
				 "less if owned by the database user, or u=rw,g=r (0640) or less if owned by root)";
		return false;
	}
	return true;
}

std::shared_ptr<TlsContext> TlsContext::load(const TlsConfig &config, std::string *error)
{
	ERR_clear_error();
	ContextOwner owner{SSL_CTX_new(TLS_server_method())};
	SSL_CTX *context = owner.context;
	if (context == nullptr) {
		*error = "could not create the TLS context: " + openssl_reason();
		return nullptr;
	}
	int min_version = tls_protocol_version(config.min_protocol.empty() ? "TLSv1.2" : config.min_protocol);
	if (min_version == 0) {
		*error = "TLS " + config.min_protocol + " is not supported on the RESP port (TLSv1.2 or later)";
		return nullptr;
	}
	int max_version = config.max_protocol.empty() ? 0 : tls_protocol_version(config.max_protocol);
	if (!config.max_protocol.empty() && max_version == 0) {
		*error = "TLS " + config.max_protocol + " is not supported on the RESP port (TLSv1.2 or later)";
		return nullptr;
	}
	if (max_version != 0 && max_version < min_version) {
		*error = "the TLS protocol version range is empty (" + config.min_protocol + " to " + config.max_protocol + ")";
		return nullptr;
	}
	SSL_CTX_set_min_proto_version(context, min_version);
	SSL_CTX_set_max_proto_version(context, max_version);
	SSL_CTX_set_options(context, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
									 SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(context, SSL_SESS_CACHE_OFF);
	/* No SSL_MODE_RELEASE_BUFFERS: a connection keeps OpenSSL's record buffers (about 34 kB)
	 * between requests, as Redis's do; releasing them costs two allocations per request
	 * (measured: docs/RESP_SECURITY.md, "How TLS runs in a worker"). */
	if (!config.ciphers.empty() && SSL_CTX_set_cipher_list(context, config.ciphers.c_str()) != 1) {
		*error = "could not set the cipher list \"" + config.ciphers + "\": " + openssl_reason();
		return nullptr;
	}
	if (SSL_CTX_use_certificate_chain_file(context, config.cert_file.c_str()) != 1) {
		*error = "could not load server certificate file \"" + config.cert_file + "\": " + openssl_reason();
		return nullptr;
	}
	if (!tls_key_file_safe(config.key_file, error))
		return nullptr;
	if (SSL_CTX_use_PrivateKey_file(context, config.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
		*error = "could not load private key file \"" + config.key_file + "\": " + openssl_reason();
		return nullptr;
	}
	if (SSL_CTX_check_private_key(context) != 1) {
		*error = "check of private key \"" + config.key_file + "\" failed: " + openssl_reason();
		return nullptr;
	}
	TlsClientAuth client_auth = config.client_auth;
	if (!config.ca_file.empty()) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(config.ca_file.c_str());
		if (SSL_CTX_load_verify_locations(context, config.ca_file.c_str(), nullptr) != 1 || names == nullptr) {
			sk_X509_NAME_pop_free(names, X509_NAME_free);
			*error = "could not load root certificate file \"" + config.ca_file + "\": " + openssl_reason();
			return nullptr;
		}
		SSL_CTX_set_client_CA_list(context, names);
	} else if (client_auth == TlsClientAuth::Yes) {
		*error = "client certificates are required (local_cache.resp_tls_auth_clients = yes), but no CA file "
				 "is set to verify them (local_cache.resp_tls_ca_file or ssl_ca_file)";
		return nullptr;
	} else {
		client_auth = TlsClientAuth::No;
	}
	/* Optional: a certificate the client presents must verify; none is fine (Redis's
	 * tls-auth-clients optional). Yes: a verified certificate is required. */
	int mode = client_auth == TlsClientAuth::No ? SSL_VERIFY_NONE
			 : client_auth == TlsClientAuth::Optional ? SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE
			 : SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	SSL_CTX_set_verify(context, mode, nullptr);
	owner.context = nullptr;
	return std::shared_ptr<TlsContext>(new TlsContext(context, client_auth));
}

TlsContext::~TlsContext()
{
	SSL_CTX_free(context_);
}

TlsSession::TlsSession(const TlsContext &context) : ssl_(SSL_new(context.ssl_context()))
{
	if (ssl_ == nullptr)
		throw std::bad_alloc();
	BIO *in = BIO_new(BIO_s_mem());
	BIO *out = BIO_new(BIO_s_mem());
	if (in == nullptr || out == nullptr) {
		BIO_free(in);
		BIO_free(out);
		SSL_free(ssl_);
		throw std::bad_alloc();
	}
	/* An empty input BIO means "more to come", never end of file: the socket says when it ends. */
	BIO_set_mem_eof_return(in, -1);
	SSL_set_bio(ssl_, in, out);
	SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession()
{
	SSL_free(ssl_);
}

TlsSession::Status TlsSession::fail(const char *what)
{
	error_ = std::string(what) + ": " + openssl_reason();
	return Status::Failed;
}

TlsSession::Status TlsSession::receive(const char *bytes, size_t length)
{
	if (length > 0 && BIO_write(SSL_get_rbio(ssl_), bytes, int(length)) != int(length))
		throw std::bad_alloc();
	return Status::Ok;
}

TlsSession::Status TlsSession::read_plaintext(char *buffer, size_t room, size_t *produced)
{
	*produced = 0;
	ERR_clear_error();
	if (!SSL_is_init_finished(ssl_)) {
		int result = SSL_do_handshake(ssl_);
		if (result != 1) {
			int reason = SSL_get_error(ssl_, result);
			if (reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE)
				return Status::Ok;
			return fail("TLS handshake failed");
		}
	}
	if (room == 0)
		return Status::Ok;
	if (SSL_read_ex(ssl_, buffer, room, produced) == 1)
		return Status::Ok;
	int reason = SSL_get_error(ssl_, 0);
	if (reason == SSL_ERROR_WANT_READ || reason == SSL_ERROR_WANT_WRITE)
		return Status::Ok;
	if (reason == SSL_ERROR_ZERO_RETURN)
		return Status::Closed;
	return fail("TLS read failed");
}

TlsSession::Status TlsSession::send(const char *bytes, size_t length)
{
	ERR_clear_error();
	size_t written = 0;
	if (length > 0 && (SSL_write_ex(ssl_, bytes, length, &written) != 1 || written != length))
		return fail("TLS write failed");
	return Status::Ok;
}

bool TlsSession::has_output() const
{
	return BIO_ctrl_pending(SSL_get_wbio(ssl_)) > 0;
}

void TlsSession::take_output(ReplyBuffer &out)
{
	BIO *bio = SSL_get_wbio(ssl_);
	for (size_t waiting; (waiting = BIO_ctrl_pending(bio)) > 0;) {
		char *room = out.reserve(waiting);
		int n = BIO_read(bio, room, int(waiting));
		if (n <= 0)
			break;
		out.commit(size_t(n));
	}
}

bool TlsSession::handshake_done() const
{
	return SSL_is_init_finished(ssl_);
}

bool TlsSession::peer_verified() const
{
	return SSL_get0_peer_certificate(ssl_) != nullptr && SSL_get_verify_result(ssl_) == X509_V_OK;
}

std::string TlsSession::peer_common_name() const
{
	X509 *certificate = SSL_get0_peer_certificate(ssl_);
	if (certificate == nullptr)
		return std::string();
	X509_NAME *subject = X509_get_subject_name(certificate);
	int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
	if (index < 0)
		return std::string();
	const ASN1_STRING *data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
	std::string name(reinterpret_cast<const char *>(ASN1_STRING_get0_data(data)), size_t(ASN1_STRING_length(data)));
	/* A NUL inside the name would make it another name than it shows (PostgreSQL refuses too). */
	if (name.find('\0') != std::string::npos)
		return std::string();
	return name;
}

const char *TlsSession::protocol() const
{
	return SSL_get_version(ssl_);
}

const char *TlsSession::cipher() const
{
	return SSL_get_cipher_name(ssl_);
}

} // namespace local_cache::resp
