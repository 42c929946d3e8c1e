/*
 * resp_reader.h — a small RESP2/RESP3 reply reader for the tests: turns the bytes the server
 * wrote into a tree, and insists on exactly one well-formed value per reply, so every test
 * that reads a reply also checks its framing.
 */
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace resp_test {

struct Value {
	char type = 0;       /* the RESP type byte: + - : $ * _ % ~ # , = */
	bool is_null = false; /* $-1, *-1, _ */
	std::string text;     /* simple, error, bulk, verbatim (without "txt:"), double, boolean */
	int64_t integer = 0;
	std::string verbatim_format;
	std::vector<Value> elements; /* array, set; map as key, value, key, value ... */

	bool is_string() const { return !is_null && (type == '$' || type == '+' || type == '='); }
	bool is_aggregate() const { return !is_null && (type == '*' || type == '%' || type == '~'); }
	/* Map entries in a RESP3 map, or pairs of a RESP2 flattened map. */
	const Value *find(std::string_view key) const
	{
		for (size_t i = 0; i + 1 < elements.size(); i += 2) {
			if (elements[i].text == key)
				return &elements[i + 1];
		}
		return nullptr;
	}
};

class Reader {
public:
	explicit Reader(std::string_view bytes) : bytes_(bytes) {}

	bool at_end() const { return pos_ == bytes_.size(); }

	Value read()
	{
		Value value;
		value.type = next_byte();
		switch (value.type) {
		case '+':
		case '-':
		case ',':
			value.text = line();
			break;
		case '#': {
			value.text = line();
			if (value.text != "t" && value.text != "f")
				throw std::runtime_error("bad boolean");
			break;
		}
		case ':':
			value.integer = number(line());
			break;
		case '_':
			if (!line().empty())
				throw std::runtime_error("bad null");
			value.is_null = true;
			break;
		case '$':
		case '=': {
			int64_t length = number(line());
			if (length == -1 && value.type == '$') {
				value.is_null = true;
				break;
			}
			if (length < 0 || size_t(length) + 2 > bytes_.size() - pos_)
				throw std::runtime_error("bad bulk length");
			value.text = std::string(bytes_.substr(pos_, size_t(length)));
			pos_ += size_t(length);
			expect_crlf();
			if (value.type == '=') {
				if (value.text.size() < 4 || value.text[3] != ':')
					throw std::runtime_error("bad verbatim string");
				value.verbatim_format = value.text.substr(0, 3);
				value.text.erase(0, 4);
			}
			break;
		}
		case '*':
		case '~':
		case '%': {
			int64_t count = number(line());
			if (count == -1 && value.type == '*') {
				value.is_null = true;
				break;
			}
			if (count < 0)
				throw std::runtime_error("bad aggregate length");
			size_t elements = size_t(count) * (value.type == '%' ? 2 : 1);
			for (size_t i = 0; i < elements; i++)
				value.elements.push_back(read());
			break;
		}
		default:
			throw std::runtime_error(std::string("unknown type byte '") + value.type + "'");
		}
		return value;
	}

private:
	char next_byte()
	{
		if (pos_ >= bytes_.size())
			throw std::runtime_error("reply ended early");
		return bytes_[pos_++];
	}

	std::string line()
	{
		size_t end = bytes_.find("\r\n", pos_);
		if (end == std::string_view::npos)
			throw std::runtime_error("line without CRLF");
		std::string text(bytes_.substr(pos_, end - pos_));
		if (text.find('\r') != std::string::npos || text.find('\n') != std::string::npos)
			throw std::runtime_error("CR or LF inside a line");
		pos_ = end + 2;
		return text;
	}

	void expect_crlf()
	{
		if (bytes_.substr(pos_, 2) != "\r\n")
			throw std::runtime_error("missing CRLF");
		pos_ += 2;
	}

	static int64_t number(const std::string &text)
	{
		size_t used = 0;
		int64_t value = std::stoll(text, &used);
		if (used != text.size())
			throw std::runtime_error("bad number " + text);
		return value;
	}

	std::string_view bytes_;
	size_t pos_ = 0;
};

/* Exactly one value, nothing after it. */
inline Value read_one(std::string_view bytes)
{
	Reader reader(bytes);
	Value value = reader.read();
	if (!reader.at_end())
		throw std::runtime_error("bytes after the reply");
	return value;
}

/* Every value in the bytes (a pipeline's replies). */
inline std::vector<Value> read_all(std::string_view bytes)
{
	Reader reader(bytes);
	std::vector<Value> values;
	while (!reader.at_end())
		values.push_back(reader.read());
	return values;
}

} // namespace resp_test
