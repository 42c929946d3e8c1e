/*
 * key_bytes.cpp — canonical key bytes and their text form (key_bytes.h).
 */
#include "extension/key_bytes.h"

#include <charconv>
#include <cstring>
#include <limits>

namespace local_cache {

namespace {

const char HEX[] = "0123456789abcdef";

/* A lower-case hex digit's value, 0x10 for anything else (upper case is not the canonical
 * spelling): a table lookup per character, on the RESP workers' path of every uuid key. */
struct HexDigits {
	unsigned char value[256];
	constexpr HexDigits() : value()
	{
		for (int c = 0; c < 256; c++)
			value[c] = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 0x10;
	}
};
constexpr HexDigits HEX_DIGITS;

/* Where each of a uuid's 16 bytes starts in its 36 characters; dashes at 8, 13, 18 and 23. */
constexpr unsigned char UUID_BYTE_AT[UUID_KEY_BYTES] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};

/* A fixed-size column's bytes (an integer, a uuid) from its canonical text into `out`;
 * returns how many, 0 when the text is not canonical. */
uint32_t fixed_column_from_text(KeyKind kind, std::string_view text, char *out)
{
	if (is_integer(kind)) {
		int64_t value;
		if (!parse_canonical_int64(text, &value) || !integer_fits(value, kind))
			return 0; /* no value of the column: no key of this shape, as canonical_spelling says */
		std::memcpy(out, &value, INT_KEY_BYTES);
		return INT_KEY_BYTES;
	}
	if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-')
		return 0;
	const unsigned char *digits = reinterpret_cast<const unsigned char *>(text.data());
	unsigned invalid = 0;
	for (uint32_t b = 0; b < UUID_KEY_BYTES; b++) {
		unsigned high = HEX_DIGITS.value[digits[UUID_BYTE_AT[b]]];
		unsigned low = HEX_DIGITS.value[digits[UUID_BYTE_AT[b] + 1]];
		invalid |= high | low;
		out[b] = char(high << 4 | low);
	}
	return invalid & 0x10 ? 0 : UUID_KEY_BYTES;
}

/* Where a composite key's column ends in the text (an unescaped ':' or the end); false for an
 * escape of anything but ':' and '\\'. */
bool find_column_end(std::string_view text, size_t at, size_t *end)
{
	for (; at < text.size() && text[at] != ':'; at++) {
		if (text[at] == '\\' && (++at == text.size() || (text[at] != ':' && text[at] != '\\')))
			return false;
	}
	*end = at;
	return true;
}

/* isspace() in the C locale: what PostgreSQL's integer input skips around the digits. */
bool sql_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* An integer as PostgreSQL 15's int2in, int4in and int8in read it (pg_strtoint16/32/64):
 * blanks around, one '-' or '+', at least one digit, leading zeros, within the kind's range. */
bool integer_as_sql_reads(KeyKind kind, std::string_view text, int64_t *value)
{
	size_t at = 0, end = text.size();
	while (at < end && sql_blank(text[at]))
		at++;
	while (end > at && sql_blank(text[end - 1]))
		end--;
	bool negative = false;
	if (at < end && (text[at] == '-' || text[at] == '+'))
		negative = text[at++] == '-';
	if (at == end)
		return false;
	constexpr uint64_t max_magnitude = uint64_t(std::numeric_limits<int64_t>::max()) + 1;
	uint64_t magnitude = 0;
	for (; at < end; at++) {
		if (text[at] < '0' || text[at] > '9')
			return false;
		unsigned digit = unsigned(text[at] - '0');
		if (magnitude > (max_magnitude - digit) / 10)
			return false; /* past any int64; leading zeros keep it 0 */
		magnitude = magnitude * 10 + digit;
	}
	if (!negative && magnitude == max_magnitude)
		return false;
	*value = !negative ? int64_t(magnitude)
			 : magnitude == max_magnitude ? std::numeric_limits<int64_t>::min() : -int64_t(magnitude);
	return integer_fits(*value, kind);
}

/* A byte with A-Z folded to a-z; never the locale's tolower(), which a backend sets from the
 * database. */
unsigned char ascii_lower(char c)
{
	unsigned char u = static_cast<unsigned char>(c);
	return u >= 'A' && u <= 'Z' ? u + ('a' - 'A') : u;
}

/* A uuid as PostgreSQL 15's uuid_in reads it: 32 hex digits in either case, optionally in
 * braces, with a '-' allowed after any group of four digits but the last. */
bool uuid_as_sql_reads(std::string_view text, char *out)
{
	size_t at = 0;
	bool braces = !text.empty() && text[0] == '{';
	at += braces;
	for (uint32_t b = 0; b < UUID_KEY_BYTES; b++) {
		if (text.size() - at < 2)
			return false;
		unsigned high = HEX_DIGITS.value[ascii_lower(text[at])];
		unsigned low = HEX_DIGITS.value[ascii_lower(text[at + 1])];
		if ((high | low) & 0x10)
			return false;
		out[b] = char(high << 4 | low);
		at += 2;
		if (b % 2 == 1 && b + 1 < UUID_KEY_BYTES && at < text.size() && text[at] == '-')
			at++;
	}
	if (braces && (at == text.size() || text[at++] != '}'))
		return false;
	return at == text.size();
}

/* A uuid's 16 bytes as its 36 characters of canonical text (lower case, dashes at 8, 13, 18
 * and 23). */
void write_uuid_text(const char *bytes, char *out)
{
	for (uint32_t i = 0; i < UUID_KEY_BYTES; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*out++ = '-';
		unsigned char byte = static_cast<unsigned char>(bytes[i]);
		*out++ = HEX[byte >> 4];
		*out++ = HEX[byte & 15];
	}
}

/*
 * The canonical text of one column spelled as SQL would read it, written to `out`; its length,
 * or npos when the spelling is no value of the column. Never longer than the spelling, but for
 * a uuid (4 more, its dashes). A composite key's text column comes escaped as find_column_end
 * checked it — every ':' and '\\' in it escaped, as the canonical text escapes them — so
 * its spelling is already its text.
 */
size_t column_spelling(KeyKind kind, std::string_view spelled, char *out)
{
	constexpr size_t npos = std::string_view::npos;
	if (is_integer(kind)) {
		int64_t value;
		if (!integer_as_sql_reads(kind, spelled, &value))
			return npos;
		return size_t(std::to_chars(out, out + 20, value).ptr - out); /* at most 20 characters */
	}
	if (kind == KeyKind::Uuid) {
		char bytes[UUID_KEY_BYTES];
		if (!uuid_as_sql_reads(spelled, bytes))
			return npos;
		write_uuid_text(bytes, out);
		return 36;
	}
	size_t len = spelled.size();
	if (kind == KeyKind::Bpchar) /* no escape makes a blank: these are the value's own */
		len = without_trailing_blanks(spelled.data(), uint32_t(len));
	std::memcpy(out, spelled.data(), len);
	return len;
}

bool append_column_text(KeyKind kind, KeyBytes column, bool escape, std::string &out)
{
	if (is_integer(kind)) {
		if (column.len != INT_KEY_BYTES)
			return false;
		int64_t value;
		std::memcpy(&value, column.data, INT_KEY_BYTES);
		out.append(std::to_string(value));
		return true;
	}
	if (kind == KeyKind::Uuid) {
		if (column.len != UUID_KEY_BYTES)
			return false;
		char text[36];
		write_uuid_text(column.data, text);
		out.append(text, sizeof(text));
		return true;
	}
	for (uint32_t i = 0; i < column.len; i++) {
		char c = column.data[i];
		if (escape && (c == ':' || c == '\\'))
			out.push_back('\\');
		out.push_back(c);
	}
	return true;
}

} // namespace

bool parse_canonical_int64(std::string_view text, int64_t *value)
{
	/* 20 characters hold "-9223372036854775808"; anything longer cannot be canonical. */
	if (text.empty() || text.size() > 20)
		return false;
	size_t i = 0;
	bool negative = false;
	if (text[0] == '-') {
		negative = true;
		i = 1;
		if (text.size() == 1)
			return false;
	}
	if (text[i] == '0') {
		/* "0" alone is canonical; "-0" and leading zeros are not. */
		if (text.size() == 1) {
			*value = 0;
			return true;
		}
		return false;
	}
	uint64_t magnitude = 0;
	for (; i < text.size(); i++) {
		char c = text[i];
		if (c < '0' || c > '9')
			return false;
		unsigned digit = unsigned(c - '0');
		if (magnitude > std::numeric_limits<uint64_t>::max() / 10)
			return false;
		magnitude *= 10;
		if (magnitude > std::numeric_limits<uint64_t>::max() - digit)
			return false;
		magnitude += digit;
	}
	constexpr uint64_t max_positive = uint64_t(std::numeric_limits<int64_t>::max());
	if (negative) {
		if (magnitude > max_positive + 1)
			return false;
		*value = magnitude == max_positive + 1 ? std::numeric_limits<int64_t>::min()
											   : -int64_t(magnitude);
	} else {
		if (magnitude > max_positive)
			return false;
		*value = int64_t(magnitude);
	}
	return true;
}

bool integer_fits(int64_t value, KeyKind kind)
{
	switch (kind) {
	case KeyKind::Int2: return value >= std::numeric_limits<int16_t>::min() && value <= std::numeric_limits<int16_t>::max();
	case KeyKind::Int4: return value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max();
	case KeyKind::Int8: return true;
	default: return false;
	}
}

int put_component_length(uint32_t len, char *out)
{
	int n = 0;
	while (len >= 0x80) {
		out[n++] = char(0x80 | (len & 0x7f));
		len >>= 7;
	}
	out[n++] = char(len);
	return n;
}

bool split_key(const KeyShape &shape, KeyBytes key, KeyBytes *columns)
{
	if (!shape.composite()) {
		columns[0] = key;
		return true;
	}
	uint32_t at = 0;
	for (int c = 0; c < shape.ncolumns; c++) {
		uint64_t len = 0;
		int shift = 0;
		for (;;) {
			if (at == key.len || shift > 28)
				return false;
			unsigned char byte = static_cast<unsigned char>(key.data[at++]);
			if (byte == 0 && shift > 0)
				return false; /* a length in more bytes than it needs: not how keys are made */
			len |= uint64_t(byte & 0x7f) << shift;
			shift += 7;
			if ((byte & 0x80) == 0)
				break;
		}
		if (len > key.len - at)
			return false;
		columns[c] = KeyBytes{key.data + at, uint32_t(len)};
		at += uint32_t(len);
	}
	return at == key.len;
}

bool key_from_text(const KeyShape &shape, std::string_view text, char *buffer, KeyBytes *out)
{
	if (text.size() > UINT32_MAX / 2)
		return false;
	if (!shape.composite()) {
		KeyKind kind = shape.kinds[0];
		if (kind == KeyKind::Text || kind == KeyKind::Bpchar) {
			/* The text itself: no copy. A character key's bytes never end in a blank, so a
			 * spelling with trailing blanks is not its text (though its equality ignores them). */
			if (kind == KeyKind::Bpchar && !text.empty() && text.back() == ' ')
				return false;
			*out = KeyBytes{text.data(), uint32_t(text.size())};
			return true;
		}
		*out = KeyBytes{buffer, fixed_column_from_text(kind, text, buffer)};
		return out->len > 0;
	}
	size_t at = 0;
	uint32_t written = 0;
	for (int c = 0; c < shape.ncolumns; c++) {
		size_t end;
		if (!find_column_end(text, at, &end))
			return false;
		/* Every column but the last ends at a ':'; the last at the end. */
		if ((c + 1 < shape.ncolumns) != (end < text.size()))
			return false;
		std::string_view column = text.substr(at, end - at);
		KeyKind kind = shape.kinds[c];
		if (kind == KeyKind::Text || kind == KeyKind::Bpchar) {
			/* Unescape into place after the length prefix. A character column ending in a
			 * blank is not canonical (no escape makes a blank, so the text ends in it too). */
			if (kind == KeyKind::Bpchar && !column.empty() && column.back() == ' ')
				return false;
			char *bytes = buffer + written + 5;
			uint32_t n = 0;
			for (size_t i = 0; i < column.size(); i++) {
				if (column[i] == '\\')
					i++;
				bytes[n++] = column[i];
			}
			int prefix = put_component_length(n, buffer + written);
			std::memmove(buffer + written + prefix, bytes, n);
			written += uint32_t(prefix) + n;
		} else {
			if (column.find('\\') != std::string_view::npos)
				return false; /* nothing in an integer or a uuid needs escaping */
			uint32_t n = fixed_column_from_text(kind, column, buffer + written + 1);
			if (n == 0)
				return false;
			buffer[written] = char(n); /* 8 and 16 take one byte */
			written += 1 + n;
		}
		at = end + 1;
	}
	*out = KeyBytes{buffer, written};
	return true;
}

bool append_key_text(const KeyShape &shape, KeyBytes key, std::string &out)
{
	KeyBytes columns[MAX_KEY_COLUMNS];
	if (shape.ncolumns < 1 || !split_key(shape, key, columns))
		return false;
	size_t start = out.size();
	for (int c = 0; c < shape.ncolumns; c++) {
		if (c > 0)
			out.push_back(':');
		if (!append_column_text(shape.kinds[c], columns[c], shape.composite(), out)) {
			out.resize(start);
			return false;
		}
	}
	return true;
}

bool canonical_spelling(const KeyShape &shape, std::string_view text, char *buffer, std::string_view *out)
{
	if (shape.ncolumns < 1 || text.size() > UINT32_MAX / 2)
		return false;
	size_t at = 0, written = 0;
	for (int c = 0; c < shape.ncolumns; c++) {
		size_t end = text.size();
		/* The columns are where key_from_text finds them: an unescaped ':' ends one. */
		if (shape.composite() && (!find_column_end(text, at, &end) || (c + 1 < shape.ncolumns) != (end < text.size())))
			return false;
		if (c > 0)
			buffer[written++] = ':';
		size_t n = column_spelling(shape.kinds[c], text.substr(at, end - at), buffer + written);
		if (n == std::string_view::npos)
			return false;
		written += n;
		at = end + 1;
	}
	*out = std::string_view(buffer, written);
	return true;
}

} // namespace local_cache
