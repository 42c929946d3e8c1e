/*
 * json_object.cpp — read_plain_object (json_object.h): a SET's flat JSON object read in one pass,
 * about a fifth of what PostgreSQL's parser, with its callbacks and copies, costs per SET.
 */
#include "resp_server/commands/json_object.h"

namespace local_cache::resp {

namespace {

class Reader {
public:
	explicit Reader(std::string_view text) : text_(text) {}

	void skip_space()
	{
		while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
			at_++;
	}
	bool take(char c)
	{
		if (at_ < text_.size() && text_[at_] == c) {
			at_++;
			return true;
		}
		return false;
	}
	bool at_end() const { return at_ == text_.size(); }
	char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }

	/* A string without escapes and control characters; the opening quote is next. */
	bool string(std::string_view *out)
	{
		if (!take('"'))
			return false;
		size_t start = at_;
		for (; at_ < text_.size(); at_++) {
			unsigned char c = static_cast<unsigned char>(text_[at_]);
			if (c == '"') {
				*out = text_.substr(start, at_ - start);
				at_++;
				return true;
			}
			if (c == '\\' || c < 0x20)
				return false;
		}
		return false;
	}

	/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, followed by a delimiter. */
	bool number(std::string_view *out)
	{
		size_t start = at_;
		take('-');
		if (!take('0') && !digits())
			return false;
		if (take('.') && !digits())
			return false;
		if (take('e') || take('E')) {
			if (!take('+'))
				take('-');
			if (!digits())
				return false;
		}
		*out = text_.substr(start, at_ - start);
		return delimiter_next();
	}

	/* true, false or null, followed by a delimiter. */
	bool literal(std::string_view word)
	{
		if (text_.substr(at_, word.size()) != word)
			return false;
		at_ += word.size();
		return delimiter_next();
	}

private:
	bool digits()
	{
		size_t start = at_;
		while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9')
			at_++;
		return at_ > start;
	}
	bool delimiter_next() const
	{
		char c = peek();
		return c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
	}

	std::string_view text_;
	size_t at_ = 0;
};

bool read_value(Reader &reader, JsonMember *member)
{
	member->has_scalar = false;
	member->is_null = false;
	switch (reader.peek()) {
	case '"':
		member->has_scalar = true;
		return reader.string(&member->scalar);
	case 't':
		return reader.literal("true");
	case 'f':
		return reader.literal("false");
	case 'n':
		member->is_null = true;
		return reader.literal("null");
	default:
		member->has_scalar = true;
		return reader.number(&member->scalar);
	}
}

} // namespace

bool read_plain_object(std::string_view text, JsonMember *members, size_t capacity, size_t *count)
{
	Reader reader(text);
	*count = 0;
	reader.skip_space();
	if (!reader.take('{'))
		return false;
	reader.skip_space();
	if (!reader.take('}')) {
		for (;;) {
			if (*count == capacity)
				return false;
			JsonMember &member = members[*count];
			if (!reader.string(&member.name))
				return false;
			reader.skip_space();
			if (!reader.take(':'))
				return false;
			reader.skip_space();
			if (!read_value(reader, &member))
				return false;
			++*count;
			reader.skip_space();
			if (reader.take('}'))
				break;
			if (!reader.take(','))
				return false;
			reader.skip_space();
		}
	}
	reader.skip_space();
	return reader.at_end();
}

} // namespace local_cache::resp
