/*
 * key_bytes.h — a primary key's value as the store's canonical bytes, and as the text that
 * names it in RESP keys. Two keys are equal under the primary key's btree equality exactly
 * when their bytes are equal:
 *
 *   smallint, integer, bigint  the value as an int64: 8 bytes in host order (so ALTER TYPE
 *                              between them renames no row)
 *   text, varchar              the string's bytes (deterministic collations only: primary_key.cpp)
 *   character(n)               the string's bytes without trailing blanks, which its equality
 *                              ignores
 *   uuid                       its 16 bytes
 *   composite (2 to 8 columns) per column in key order: its bytes' length as a varint, then
 *                              its bytes
 *
 * Text form (RESP): integers in decimal without a sign '+' or leading zeros (and within the
 * column's range), text as it is,
 * character(n) without its trailing blanks, uuid in lower case with dashes; the columns of a
 * composite key joined by ':', with ':' and '\' inside a column escaped by '\'. This is the
 * one spelling of each key, the one the server renders (SCAN, KEYS, invalidation pushes): a
 * text parses exactly when it is the rendering of its bytes, so a client that caches by the
 * name it read is told about that name. Any other spelling names no key (canonical_spelling
 * says which key it would have meant, for error messages).
 *
 * No PostgreSQL header: the RESP workers' protocol side and the unit tests use it too.
 */
#pragma once

#include "extension/shard.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace local_cache {

constexpr int MAX_KEY_COLUMNS = 8;
constexpr uint32_t INT_KEY_BYTES = 8;
constexpr uint32_t UUID_KEY_BYTES = 16;

enum class KeyKind : uint8_t { Int2, Int4, Int8, Text, Bpchar, Uuid };

/* The kinds of a primary key's columns, in key order. */
struct KeyShape {
	int ncolumns = 0;
	KeyKind kinds[MAX_KEY_COLUMNS] = {};

	bool composite() const { return ncolumns > 1; }
};

inline bool is_integer(KeyKind kind)
{
	return kind == KeyKind::Int2 || kind == KeyKind::Int4 || kind == KeyKind::Int8;
}

/*
 * Redis's string2ll: an optional '-', then digits without leading zeros ("0" alone is fine,
 * "-0" is not), no '+', no spaces, within int64. Integer keys, and RESP's own numbers.
 */
bool parse_canonical_int64(std::string_view text, int64_t *value);

/* Whether an int64 is a value of the integer kind. */
bool integer_fits(int64_t value, KeyKind kind);

/* What character(n)'s equality compares: the string without trailing blanks. */
inline uint32_t without_trailing_blanks(const char *bytes, uint32_t len)
{
	while (len > 0 && bytes[len - 1] == ' ')
		len--;
	return len;
}

/* Writes a composite key's column length prefix; returns its size (at most 5 bytes). */
int put_component_length(uint32_t len, char *out);

/*
 * Splits a composite key into its columns' bytes (a single-column key is its own column).
 * False when the bytes are not ncolumns length-prefixed columns: no key has them.
 */
bool split_key(const KeyShape &shape, KeyBytes key, KeyBytes *columns);

/* Room key_from_text and canonical_spelling may write for a text of `len` characters. */
inline size_t key_bytes_bound(size_t len)
{
	return len + (5 + UUID_KEY_BYTES) * MAX_KEY_COLUMNS;
}

/*
 * A key's bytes from its text form; false when the text is not the canonical spelling of a
 * key of this shape (so append_key_text of the bytes gives `text` back, byte for byte). The
 * bytes point into `text` or into `buffer` (key_bytes_bound(text's size) bytes): valid while
 * both are unchanged. Never allocates.
 */
bool key_from_text(const KeyShape &shape, std::string_view text, char *buffer, KeyBytes *out);

/*
 * The canonical text of the key `text` spells as SQL would read it: each column as PostgreSQL
 * 15's input function of its type reads it — integers with blanks around them, a '+', leading
 * zeros, "-0" (int2in, int4in, int8in), within the column's range; a uuid in any case, in
 * braces, with any of its optional dashes left out (uuid_in); character(n) with trailing blanks
 * — and a composite key's columns split and escaped as key_from_text wants them. For a
 * canonical text, that text. Written to `buffer` (key_bytes_bound(text's size) bytes), `out`
 * pointing to it; false when the text spells no key of this shape. Never allocates: the writes
 * call it inside a PostgreSQL transaction, to name the key in the error a non-canonical
 * spelling gets.
 */
bool canonical_spelling(const KeyShape &shape, std::string_view text, char *buffer, std::string_view *out);

/* Appends a key's text form to `out`; false (nothing appended) when the bytes are no key. */
bool append_key_text(const KeyShape &shape, KeyBytes key, std::string &out);

} // namespace local_cache
