/*
 * tls_session_test.cpp — Boost.Test cases of TlsContext and TlsSession
 * (resp_server/net/tls_session.h): a real OpenSSL client talks to the server session through
 * memory, with a CA, server and client certificates made by the test: the handshake and a
 * request both ways, client certificates (verified, untrusted, required), protocol versions,
 * plaintext on the TLS port, close_notify, and the key file's permission rule.
 */
#include <boost/test/unit_test.hpp>

#include "resp_server/net/tls_session.h"
#include "resp_server/tests/tls_certificates.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace local_cache::resp;
using resp_test::certificates;
using resp_test::KeyAndCertificate;

namespace {

/* An OpenSSL client on memory BIOs, optionally with a certificate. */
struct Client {
	SSL_CTX *context;
	SSL *ssl;
	explicit Client(const KeyAndCertificate *identity = nullptr, int max_version = 0)
	{
		context = SSL_CTX_new(TLS_client_method());
		SSL_CTX_set_max_proto_version(context, max_version);
		X509_STORE_add_cert(SSL_CTX_get_cert_store(context), certificates().ca.certificate);
		SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
		if (identity != nullptr) {
			SSL_CTX_use_certificate(context, identity->certificate);
			SSL_CTX_use_PrivateKey(context, identity->key);
		}
		ssl = SSL_new(context);
		BIO *in = BIO_new(BIO_s_mem());
		BIO *out = BIO_new(BIO_s_mem());
		BIO_set_mem_eof_return(in, -1);
		SSL_set_bio(ssl, in, out);
		SSL_set_connect_state(ssl);
		SSL_set_tlsext_host_name(ssl, "localhost");
	}
	~Client()
	{
		SSL_free(ssl);
		SSL_CTX_free(context);
	}
	std::string take_output()
	{
		std::string bytes;
		char chunk[4096];
		int n;
		while ((n = BIO_read(SSL_get_wbio(ssl), chunk, sizeof(chunk))) > 0)
			bytes.append(chunk, size_t(n));
		return bytes;
	}
	void receive(const std::string &bytes) { BIO_write(SSL_get_rbio(ssl), bytes.data(), int(bytes.size())); }
	std::string read()
	{
		char chunk[4096];
		size_t n = 0;
		std::string text;
		while (SSL_read_ex(ssl, chunk, sizeof(chunk), &n) == 1)
			text.append(chunk, n);
		ERR_clear_error();
		return text;
	}
};

std::string take(TlsSession &session)
{
	ReplyBuffer out;
	session.take_output(out);
	return std::string(out.data(), out.size());
}

/* Moves bytes both ways until neither side has more to say; the server's last status. */
TlsSession::Status pump(Client &client, TlsSession &server, std::string *plaintext = nullptr)
{
	TlsSession::Status status = TlsSession::Status::Ok;
	for (int round = 0; round < 10; round++) {
		SSL_do_handshake(client.ssl);
		std::string to_server = client.take_output();
		status = server.receive(to_server.data(), to_server.size());
		char buffer[4096];
		size_t produced = 0;
		do {
			status = server.read_plaintext(buffer, sizeof(buffer), &produced);
			if (plaintext != nullptr)
				plaintext->append(buffer, produced);
		} while (status == TlsSession::Status::Ok && produced > 0);
		std::string to_client = take(server);
		client.receive(to_client);
		if (status != TlsSession::Status::Ok || (to_server.empty() && to_client.empty()))
			break;
	}
	return status;
}

std::shared_ptr<TlsContext> load(const TlsConfig &config)
{
	std::string error;
	std::shared_ptr<TlsContext> context = TlsContext::load(config, &error);
	BOOST_TEST_REQUIRE(context != nullptr, error);
	return context;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls_session)

BOOST_AUTO_TEST_CASE(a_request_and_its_reply_cross_in_both_directions)
{
	std::shared_ptr<TlsContext> context = load(certificates().config());
	TlsSession server(*context);
	Client client;
	BOOST_TEST((pump(client, server) == TlsSession::Status::Ok));
	BOOST_TEST(server.handshake_done());
	BOOST_TEST(SSL_is_init_finished(client.ssl) == 1);
	BOOST_TEST(!server.peer_verified()); /* no client certificate: optional */
	BOOST_TEST(std::string(server.protocol()) == "TLSv1.3");

	SSL_write(client.ssl, "*1\r\n$4\r\nPING\r\n", 14);
	std::string request;
	BOOST_TEST((pump(client, server, &request) == TlsSession::Status::Ok));
	BOOST_TEST(request == "*1\r\n$4\r\nPING\r\n");
	BOOST_TEST((server.send("+PONG\r\n", 7) == TlsSession::Status::Ok));
	client.receive(take(server));
	BOOST_TEST(client.read() == "+PONG\r\n");
}

BOOST_AUTO_TEST_CASE(a_client_certificate_signed_by_the_ca_names_its_common_name)
{
	std::shared_ptr<TlsContext> context = load(certificates().config(TlsClientAuth::Yes));
	TlsSession server(*context);
	Client client(&certificates().client);
	BOOST_TEST((pump(client, server) == TlsSession::Status::Ok));
	SSL_write(client.ssl, "x", 1); /* TLS 1.3: the server checks the certificate after its Finished */
	std::string got;
	BOOST_TEST((pump(client, server, &got) == TlsSession::Status::Ok));
	BOOST_TEST(server.peer_verified());
	BOOST_TEST(server.peer_common_name() == "alice");
}

BOOST_AUTO_TEST_CASE(an_untrusted_client_certificate_fails_the_handshake_even_when_optional)
{
	std::shared_ptr<TlsContext> context = load(certificates().config(TlsClientAuth::Optional));
	TlsSession server(*context);
	Client client(&certificates().stranger);
	BOOST_TEST((pump(client, server) == TlsSession::Status::Failed));
	BOOST_TEST(server.error().find("certificate") != std::string::npos, server.error());
	BOOST_TEST(!server.peer_verified());
}

BOOST_AUTO_TEST_CASE(required_client_certificates_refuse_a_client_without_one)
{
	std::shared_ptr<TlsContext> context = load(certificates().config(TlsClientAuth::Yes));
	TlsSession server(*context);
	Client client;
	BOOST_TEST((pump(client, server) == TlsSession::Status::Failed));
	BOOST_TEST(server.error().find("certificate") != std::string::npos, server.error());
}

BOOST_AUTO_TEST_CASE(auth_clients_no_ignores_client_certificates)
{
	std::shared_ptr<TlsContext> context = load(certificates().config(TlsClientAuth::No));
	TlsSession server(*context);
	Client client(&certificates().stranger);
	BOOST_TEST((pump(client, server) == TlsSession::Status::Ok));
	BOOST_TEST(!server.peer_verified());
	BOOST_TEST(server.peer_common_name() == "");
}

BOOST_AUTO_TEST_CASE(the_minimum_protocol_version_is_kept)
{
	TlsConfig config = certificates().config();
	config.min_protocol = "TLSv1.3";
	std::shared_ptr<TlsContext> context = load(config);
	TlsSession server(*context);
	Client client(nullptr, TLS1_2_VERSION);
	BOOST_TEST((pump(client, server) == TlsSession::Status::Failed));

	config.min_protocol = "TLSv1.1";
	std::string error;
	BOOST_TEST(TlsContext::load(config, &error) == nullptr);
	BOOST_TEST(error.find("TLSv1.2 or later") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(plaintext_on_the_tls_port_fails_without_a_reply)
{
	std::shared_ptr<TlsContext> context = load(certificates().config());
	TlsSession server(*context);
	const char request[] = "*1\r\n$4\r\nPING\r\n";
	server.receive(request, sizeof(request) - 1);
	char buffer[64];
	size_t produced = 0;
	BOOST_TEST((server.read_plaintext(buffer, sizeof(buffer), &produced) == TlsSession::Status::Failed));
	BOOST_TEST(produced == 0u);
	BOOST_TEST(take(server).find("PONG") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(close_notify_ends_the_session)
{
	std::shared_ptr<TlsContext> context = load(certificates().config());
	TlsSession server(*context);
	Client client;
	pump(client, server);
	SSL_shutdown(client.ssl);
	BOOST_TEST((pump(client, server) == TlsSession::Status::Closed));
}

BOOST_AUTO_TEST_CASE(a_key_file_others_can_read_is_refused)
{
	TlsConfig config = certificates().config();
	config.key_file = certificates().path("loose.key");
	std::string error;
	BOOST_TEST(TlsContext::load(config, &error) == nullptr);
	BOOST_TEST(error.find("group or world access") != std::string::npos, error);

	config = certificates().config();
	config.cert_file = certificates().path("missing.crt");
	BOOST_TEST(TlsContext::load(config, &error) == nullptr);
	BOOST_TEST(error.find("missing.crt") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(required_client_certificates_need_a_ca)
{
	TlsConfig config = certificates().config(TlsClientAuth::Yes);
	config.ca_file.clear();
	std::string error;
	BOOST_TEST(TlsContext::load(config, &error) == nullptr);
	BOOST_TEST(error.find("CA file") != std::string::npos, error);
}

BOOST_AUTO_TEST_SUITE_END()
