/*
 * fuzz_keys.cpp — libFuzzer target for the key bytes and their RESP text (key_bytes.cpp),
 * which the RESP workers run on every key a client sends.
 *
 * Build and run with `make fuzz` (clang, -fsanitize=fuzzer,address,undefined). The first input
 * byte picks the number of key columns, the next ones their kinds; the rest is used twice:
 *   - as a key's text: parsing never writes past key_bytes_bound() nor reads past the text
 *     (exact-size heap copies); a text that parses gives bytes that split into the columns, and
 *     the canonical text of those bytes parses back to the same bytes and is its own canonical
 *     text;
 *   - as key bytes: splitting and rendering never read past them; bytes that render as text
 *     read back as themselves, unless a character column ends with blanks or an integer is
 *     outside its column's range (no canonical key has either);
 *   - as a spelling: canonical_spelling (into an exact-size buffer) gives the text back exactly
 *     when the text parses (the one spelling of a key is the one the server renders), and what
 *     it gives for any other spelling parses, renders as itself and is its own spelling.
 */
#include "extension/key_bytes.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace local_cache;

namespace {

[[noreturn]] void fail(const char *what)
{
	fprintf(stderr, "fuzz_keys: %s\n", what);
	__builtin_trap();
}

/* Parses `text` from an exact-size heap copy into an exact-size buffer; the bytes are copied
 * out, as the text and the buffer go with this call. */
bool parse(const KeyShape &shape, const std::string &text, std::string *bytes)
{
	std::unique_ptr<char[]> copy(new char[text.size() + 1]);
	std::copy(text.begin(), text.end(), copy.get());
	std::unique_ptr<char[]> buffer(new char[key_bytes_bound(text.size())]);
	KeyBytes key;
	if (!key_from_text(shape, std::string_view(copy.get(), text.size()), buffer.get(), &key))
		return false;
	bytes->assign(key.data, key.len);
	return true;
}

bool render(const KeyShape &shape, const std::string &bytes, std::string *text)
{
	std::unique_ptr<char[]> copy(new char[bytes.size() + 1]);
	std::copy(bytes.begin(), bytes.end(), copy.get());
	text->clear();
	return append_key_text(shape, KeyBytes{copy.get(), uint32_t(bytes.size())}, *text);
}

bool spell(const KeyShape &shape, const std::string &text, std::string *spelling)
{
	std::unique_ptr<char[]> copy(new char[text.size() + 1]);
	std::copy(text.begin(), text.end(), copy.get());
	std::unique_ptr<char[]> buffer(new char[key_bytes_bound(text.size())]);
	std::string_view out;
	if (!canonical_spelling(shape, std::string_view(copy.get(), text.size()), buffer.get(), &out))
		return false;
	spelling->assign(out);
	return true;
}

/* Bytes no canonical key has, though they render: a character column ending with a blank, or
 * an integer outside its column's range. */
bool has_column_no_key_has(const KeyShape &shape, const std::string &bytes)
{
	KeyBytes columns[MAX_KEY_COLUMNS];
	if (!split_key(shape, KeyBytes{bytes.data(), uint32_t(bytes.size())}, columns))
		return false;
	for (int c = 0; c < shape.ncolumns; c++) {
		if (shape.kinds[c] == KeyKind::Bpchar && columns[c].len > 0 && columns[c].data[columns[c].len - 1] == ' ')
			return true;
		int64_t value;
		if (is_integer(shape.kinds[c]) && columns[c].len == INT_KEY_BYTES) {
			std::memcpy(&value, columns[c].data, INT_KEY_BYTES);
			if (!integer_fits(value, shape.kinds[c]))
				return true;
		}
	}
	return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	KeyShape shape;
	shape.ncolumns = data[0] % MAX_KEY_COLUMNS + 1;
	size_t at = 1;
	for (int c = 0; c < shape.ncolumns; c++)
		shape.kinds[c] = KeyKind(at < size ? data[at++] % 6 : 0);
	const std::string input(reinterpret_cast<const char *>(data + at), size - at);

	std::string bytes, text, again;
	if (parse(shape, input, &bytes)) {
		KeyBytes columns[MAX_KEY_COLUMNS];
		if (!split_key(shape, KeyBytes{bytes.data(), uint32_t(bytes.size())}, columns))
			fail("the bytes of a parsed text do not split into its columns");
		if (!render(shape, bytes, &text))
			fail("the bytes of a parsed text have no text");
		if (!parse(shape, text, &again) || again != bytes)
			fail("a key's canonical text does not read back as its bytes");
		std::string text_again;
		if (!render(shape, again, &text_again) || text_again != text)
			fail("a canonical text is not its own canonical text");
	}

	std::string spelling, spelling_again, spelled_bytes;
	bool spelled = spell(shape, input, &spelling);
	if (parse(shape, input, &bytes) != (spelled && spelling == input))
		fail("a text parses but is not its own canonical spelling, or the reverse");
	if (spelled) {
		if (!parse(shape, spelling, &spelled_bytes))
			fail("a canonical spelling does not parse");
		if (!render(shape, spelled_bytes, &text) || text != spelling)
			fail("a canonical spelling is not the text the server renders for its key");
		if (!spell(shape, spelling, &spelling_again) || spelling_again != spelling)
			fail("a canonical spelling is not its own canonical spelling");
	}

	if (render(shape, input, &text) && !has_column_no_key_has(shape, input)) {
		if (!parse(shape, text, &again) || again != input)
			fail("rendered key bytes do not read back as themselves");
	}
	return 0;
}
