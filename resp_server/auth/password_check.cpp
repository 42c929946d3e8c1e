/*
 * password_check.cpp — SCRAM-SHA-256 and md5 verification of a plain password against
 * PostgreSQL's stored secret (what scram_verify_plain_password and md5_crypt_verify do), with
 * OpenSSL's libcrypto, and the thread that runs them.
 *
 *   SCRAM secret: SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>   (base64)
 *     SaltedPassword = PBKDF2-HMAC-SHA-256(password, salt, iterations)
 *     match          = HMAC-SHA-256(SaltedPassword, "Server Key") == ServerKey
 *   md5 secret:   "md5" || hex(md5(password || user))
 */
#include "resp_server/auth/password_check.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <pthread.h>
#include <vector>

namespace local_cache::resp {

namespace {

constexpr int kScramKeyLength = 32;
/* PostgreSQL's default scram_iterations: what a mock verification costs. */
constexpr int kMockIterations = 4096;

bool base64_decode(const std::string &text, std::vector<unsigned char> *out)
{
	if (text.empty() || text.size() % 4 != 0)
		return false;
	out->resize(text.size() / 4 * 3);
	int length = EVP_DecodeBlock(out->data(), reinterpret_cast<const unsigned char *>(text.data()), int(text.size()));
	if (length < 0)
		return false;
	size_t padding = (text.back() == '=') + (text.size() > 1 && text[text.size() - 2] == '=');
	out->resize(size_t(length) - padding);
	return true;
}

struct ScramSecret {
	int iterations = 0;
	std::vector<unsigned char> salt;
	std::vector<unsigned char> server_key;
};

bool parse_scram_secret(const std::string &secret, ScramSecret *out)
{
	const std::string prefix = "SCRAM-SHA-256$";
	if (secret.compare(0, prefix.size(), prefix) != 0)
		return false;
	size_t colon = secret.find(':', prefix.size());
	size_t dollar = secret.find('$', prefix.size());
	if (colon == std::string::npos || dollar == std::string::npos || colon > dollar)
		return false;
	size_t key_colon = secret.find(':', dollar + 1);
	if (key_colon == std::string::npos)
		return false;
	try {
		out->iterations = std::stoi(secret.substr(prefix.size(), colon - prefix.size()));
	} catch (const std::exception &) {
		return false;
	}
	std::vector<unsigned char> stored_key;
	return out->iterations > 0 && base64_decode(secret.substr(colon + 1, dollar - colon - 1), &out->salt) &&
		base64_decode(secret.substr(dollar + 1, key_colon - dollar - 1), &stored_key) &&
		base64_decode(secret.substr(key_colon + 1), &out->server_key) &&
		out->server_key.size() == kScramKeyLength;
}

std::atomic<uint64_t> hash_rounds{0};

/* HMAC(PBKDF2(password, salt, iterations), "Server Key"). */
bool scram_server_key(const std::string &password, const std::vector<unsigned char> &salt, int iterations,
					  unsigned char server_key[kScramKeyLength])
{
	unsigned char salted[kScramKeyLength];
	hash_rounds += uint64_t(iterations);
	if (PKCS5_PBKDF2_HMAC(password.data(), int(password.size()), salt.data(), int(salt.size()), iterations,
						  EVP_sha256(), kScramKeyLength, salted) != 1)
		return false;
	unsigned int length = 0;
	static const char kServerKey[] = "Server Key";
	bool ok = HMAC(EVP_sha256(), salted, kScramKeyLength, reinterpret_cast<const unsigned char *>(kServerKey),
				   strlen(kServerKey), server_key, &length) != nullptr &&
		length == kScramKeyLength;
	OPENSSL_cleanse(salted, sizeof(salted));
	return ok;
}

bool verify_scram(const ScramSecret &secret, const std::string &password)
{
	unsigned char computed[kScramKeyLength];
	bool ok = scram_server_key(password, secret.salt, secret.iterations, computed) &&
		CRYPTO_memcmp(computed, secret.server_key.data(), kScramKeyLength) == 0;
	OPENSSL_cleanse(computed, sizeof(computed));
	return ok;
}

/* The work of a SCRAM verification that cannot succeed. */
void mock_verification(const std::string &password)
{
	static const std::vector<unsigned char> kMockSalt(16, 0x5a);
	unsigned char ignored[kScramKeyLength];
	scram_server_key(password, kMockSalt, kMockIterations, ignored);
}

bool verify_md5(const std::string &secret, const std::string &password, const std::string &user)
{
	if (secret.size() != 35 || secret.compare(0, 3, "md5") != 0)
		return false;
	Secret salted(password);
	salted.append(user);
	unsigned char digest[16];
	unsigned int length = 0;
	if (EVP_Digest(salted.text().data(), salted.text().size(), digest, &length, EVP_md5(), nullptr) != 1)
		return false;
	char hex[33];
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	return CRYPTO_memcmp(hex, secret.data() + 3, 32) == 0;
}

} // namespace

uint64_t password_hash_rounds()
{
	return hash_rounds.load();
}

void Secret::clear()
{
	if (!text_.empty())
		OPENSSL_cleanse(&text_[0], text_.size());
	text_.clear();
}

char *Secret::buffer(size_t size)
{
	clear();
	text_.resize(size);
	return &text_[0];
}

void Secret::truncate(size_t size)
{
	if (size < text_.size()) {
		OPENSSL_cleanse(&text_[size], text_.size() - size);
		text_.resize(size);
	}
}

void Secret::append(std::string_view more)
{
	if (text_.size() + more.size() > text_.capacity()) {
		std::string larger;
		larger.reserve(2 * (text_.size() + more.size()));
		larger.append(text_);
		clear();
		text_.swap(larger);
	}
	text_.append(more);
}

bool verify_password(const PasswordCheck &check)
{
	ScramSecret scram;
	if (parse_scram_secret(check.secret.text(), &scram))
		return verify_scram(scram, check.password.text());
	/* No SCRAM secret: the same work, so that the time tells nothing. */
	mock_verification(check.password.text());
	return check.method == PasswordMethod::Password && verify_md5(check.secret.text(), check.password.text(), check.user);
}

PasswordChecker::PasswordChecker()
{
	/* The thread must never run the process's signal handlers (PostgreSQL's): it starts with
	 * every signal blocked. */
	sigset_t all, previous;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &previous);
	thread_ = std::thread([this] { run(); });
	pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

PasswordChecker::~PasswordChecker()
{
	{
		std::lock_guard<std::mutex> lock(mutex_);
		stopping_ = true;
		queue_.clear();
	}
	wake_.notify_all();
	thread_.join();
}

void PasswordChecker::submit(uint64_t ticket, PasswordCheck check)
{
	{
		std::lock_guard<std::mutex> lock(mutex_);
		queue_.emplace_back(ticket, std::move(check));
	}
	wake_.notify_one();
}

bool PasswordChecker::take_result(uint64_t ticket, bool *ok)
{
	std::lock_guard<std::mutex> lock(mutex_);
	auto found = results_.find(ticket);
	if (found == results_.end())
		return false;
	*ok = found->second;
	results_.erase(found);
	return true;
}

void PasswordChecker::cancel(uint64_t ticket)
{
	std::lock_guard<std::mutex> lock(mutex_);
	results_.erase(ticket);
	for (auto it = queue_.begin(); it != queue_.end(); ++it) {
		if (it->first == ticket) {
			queue_.erase(it);
			return;
		}
	}
	cancelled_.insert(ticket); /* being checked right now */
}

void PasswordChecker::run()
{
	std::unique_lock<std::mutex> lock(mutex_);
	for (;;) {
		wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
		if (stopping_)
			return;
		std::pair<uint64_t, PasswordCheck> job = std::move(queue_.front());
		queue_.pop_front();
		lock.unlock();
		bool ok = false;
		try {
			ok = verify_password(job.second);
		} catch (...) {
			/* Out of memory on this thread: the check fails, the process goes on. */
		}
		job.second = PasswordCheck();
		lock.lock();
		if (cancelled_.erase(job.first) == 0)
			results_[job.first] = ok;
	}
}

} // namespace local_cache::resp
