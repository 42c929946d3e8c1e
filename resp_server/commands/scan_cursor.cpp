/*
 * scan_cursor.cpp — SCAN cursors that carry their position, signed (scan_cursor.h has the
 * format and why).
 */
#include "resp_server/commands/scan_cursor.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstring>

namespace local_cache::resp {

namespace {

constexpr char kFormat = '1';
constexpr unsigned char kStarted = 1;
constexpr unsigned char kPadded = 2;
constexpr size_t kHeaderBytes = 1 + 8; /* flags, table */
constexpr size_t kMacBytes = 16;
constexpr size_t kMaxBytes = kHeaderBytes + ScanPosition::kMaxKeyBytes + 1 + kMacBytes;
constexpr size_t kGroupDigits = 5; /* two bytes: 0 to 65535 */
/* What the MAC covers before the position: a label (no other use of the secret can collide),
 * the role, the database. */
constexpr char kLabel[] = "local_cache SCAN cursor 1";
constexpr size_t kBoundBytes = sizeof(kLabel) + 8 + 8;

void put_u64(unsigned char *to, uint64_t value)
{
	for (int i = 7; i >= 0; i--, value >>= 8)
		to[i] = static_cast<unsigned char>(value);
}

uint64_t get_u64(const unsigned char *from)
{
	uint64_t value = 0;
	for (int i = 0; i < 8; i++)
		value = (value << 8) | from[i];
	return value;
}

/* The MAC of bytes[0..length) for `key`'s role and database. */
void sign(const ScanCursorKey &key, const unsigned char *bytes, size_t length, unsigned char *mac)
{
	unsigned char message[kBoundBytes + kMaxBytes];
	memcpy(message, kLabel, sizeof(kLabel));
	put_u64(message + sizeof(kLabel), key.role);
	put_u64(message + sizeof(kLabel) + 8, key.database);
	memcpy(message + kBoundBytes, bytes, length);
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int digest_length = 0;
	HMAC(EVP_sha256(), key.secret, int(sizeof(key.secret)), message, kBoundBytes + length, digest, &digest_length);
	memcpy(mac, digest, kMacBytes);
}

} // namespace

void encode_scan_cursor(const ScanCursorKey &key, const ScanPosition &position, std::string &out)
{
	unsigned char bytes[kMaxBytes];
	size_t key_length = position.started ? std::min<size_t>(position.after_length, ScanPosition::kMaxKeyBytes) : 0;
	size_t length = kHeaderBytes + key_length;
	bool padded = (length + kMacBytes) % 2 != 0;
	bytes[0] = static_cast<unsigned char>((position.started ? kStarted : 0) | (padded ? kPadded : 0));
	put_u64(bytes + 1, position.table);
	memcpy(bytes + kHeaderBytes, position.after_key, key_length);
	if (padded)
		bytes[length++] = 0;
	sign(key, bytes, length, bytes + length);
	length += kMacBytes;
	out.push_back(kFormat);
	for (size_t i = 0; i < length; i += 2) {
		unsigned value = (unsigned(bytes[i]) << 8) | bytes[i + 1];
		char group[kGroupDigits];
		for (size_t d = kGroupDigits; d-- > 0; value /= 10)
			group[d] = char('0' + value % 10);
		out.append(group, kGroupDigits);
	}
}

bool decode_scan_cursor(const ScanCursorKey &key, std::string_view text, ScanPosition *position)
{
	constexpr size_t kMinBytes = kHeaderBytes + kMacBytes + 1;
	if (text.size() < 1 + kMinBytes / 2 * kGroupDigits || text.size() > 1 + kMaxBytes / 2 * kGroupDigits ||
		(text.size() - 1) % kGroupDigits != 0 || text[0] != kFormat)
		return false;
	unsigned char bytes[kMaxBytes];
	size_t length = 0;
	for (size_t i = 1; i < text.size(); i += kGroupDigits) {
		unsigned value = 0;
		for (size_t d = 0; d < kGroupDigits; d++) {
			char ch = text[i + d];
			if (ch < '0' || ch > '9')
				return false;
			value = value * 10 + unsigned(ch - '0');
		}
		if (value > 0xffff)
			return false;
		bytes[length++] = static_cast<unsigned char>(value >> 8);
		bytes[length++] = static_cast<unsigned char>(value);
	}
	size_t signed_length = length - kMacBytes;
	unsigned char mac[kMacBytes];
	sign(key, bytes, signed_length, mac);
	if (CRYPTO_memcmp(mac, bytes + signed_length, kMacBytes) != 0)
		return false;
	/* Signed by this server: the layout is one it wrote (checked all the same). */
	unsigned char flags = bytes[0];
	size_t key_end = signed_length - ((flags & kPadded) ? 1 : 0);
	if (key_end < kHeaderBytes || key_end - kHeaderBytes > ScanPosition::kMaxKeyBytes)
		return false;
	ScanPosition decoded;
	decoded.table = get_u64(bytes + 1);
	decoded.started = (flags & kStarted) != 0;
	decoded.after_length = uint16_t(key_end - kHeaderBytes);
	memcpy(decoded.after_key, bytes + kHeaderBytes, decoded.after_length);
	*position = decoded;
	return true;
}

bool is_truncated_cursor(std::string_view text)
{
	if (text == "18446744073709551615" || text == "Infinity")
		return true;
	/* A JavaScript number's text past 1e21: "d.ddde+NN". */
	size_t exponent = text.find("e+");
	if (exponent == std::string_view::npos || exponent == 0 || exponent + 2 == text.size())
		return false;
	for (size_t i = 0; i < text.size(); i++) {
		char ch = text[i];
		bool digit = ch >= '0' && ch <= '9';
		if (!digit && !(i == 1 && ch == '.' && exponent > 2) && i != exponent && i != exponent + 1)
			return false;
	}
	return true;
}

} // namespace local_cache::resp
