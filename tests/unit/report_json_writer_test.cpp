// SPDX-License-Identifier: Apache-2.0
// The report's JSON writer: escaping per RFC 8259 (expected literals written by hand) and the
// layout of nested containers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "ehbt/report.hpp"
#include "report/json_writer.hpp"

namespace ehbt::report {
namespace {

TEST(ReportJsonWriter, QuotesPlainAscii) {
  EXPECT_EQ(json_quote("abc"), "\"abc\"");
}

TEST(ReportJsonWriter, EscapesQuoteAndBackslash) {
  EXPECT_EQ(json_quote("a\"b\\c"), R"("a\"b\\c")");
}

TEST(ReportJsonWriter, EscapesControlCharacters) {
  EXPECT_EQ(json_quote("\n\t\r\b\f"), R"("\n\t\r\b\f")");
  EXPECT_EQ(json_quote(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(json_quote(std::string("a\0b", 3)), R"("a\u0000b")");
}

TEST(ReportJsonWriter, KeepsDeleteAndSlashAsIs) {
  EXPECT_EQ(json_quote("/\x7f"), "\"/\x7f\"");
}

TEST(ReportJsonWriter, KeepsWellFormedUtf8) {
  EXPECT_EQ(json_quote("\xc3\xa9"), "\"\xc3\xa9\"");                  // U+00E9
  EXPECT_EQ(json_quote("\xe2\x82\xac"), "\"\xe2\x82\xac\"");          // U+20AC
  EXPECT_EQ(json_quote("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");  // U+1F600
  EXPECT_EQ(json_quote("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF
}

TEST(ReportJsonWriter, EscapesBytesThatAreNotUtf8) {
  EXPECT_EQ(json_quote("\xff"), R"("\u00ff")");
  EXPECT_EQ(json_quote("a\x80z"), R"("a\u0080z")");                  // lone continuation byte
  EXPECT_EQ(json_quote("\xc3"), R"("\u00c3")");                      // truncated at the end
  EXPECT_EQ(json_quote("\xc3z"), R"("\u00c3z")");                    // truncated by an ASCII byte
  EXPECT_EQ(json_quote("\xc0\xaf"), R"("\u00c0\u00af")");            // overlong '/'
  EXPECT_EQ(json_quote("\xe0\x80\xaf"), R"("\u00e0\u0080\u00af")");  // overlong
  EXPECT_EQ(json_quote("\xed\xa0\x80"), R"("\u00ed\u00a0\u0080")");  // surrogate D800
  EXPECT_EQ(json_quote("\xf4\x90\x80\x80"), R"("\u00f4\u0090\u0080\u0080")");  // > U+10FFFF
  EXPECT_EQ(json_quote("\xf5\x80\x80\x80"), R"("\u00f5\u0080\u0080\u0080")");
}

// Every character that needs escaping, and a multi-byte UTF-8 sequence, at every position of
// strings longer than two eight-byte words, with the escape written by hand for each.
TEST(ReportJsonWriter, EscapesAtEveryPositionOfALongString) {
  const std::string base = "abcdefghijklmnopqrstuvwx";  // 24 plain characters
  const std::pair<std::string, std::string> cases[] = {{"\"", "\\\""},
                                                       {"\\", "\\\\"},
                                                       {"\n", "\\n"},
                                                       {std::string(1, '\x01'), "\\u0001"},
                                                       {std::string(1, '\x1f'), "\\u001f"},
                                                       {std::string(1, '\0'), "\\u0000"},
                                                       {"\x7f", "\x7f"},
                                                       {" ", " "},
                                                       {"\xc3\xa9", "\xc3\xa9"},
                                                       {"\xff", "\\u00ff"}};
  for (const auto& [raw, escaped] : cases) {
    for (std::size_t at = 0; at <= base.size(); ++at) {
      const std::string in = base.substr(0, at) + raw + base.substr(at);
      const std::string want = "\"" + base.substr(0, at) + escaped + base.substr(at) + "\"";
      EXPECT_EQ(json_quote(in), want) << "at " << at << " of " << escaped;
    }
  }
}

// What RFC 8259 and the writer's rule for other bytes make of one byte standing alone (not
// part of a UTF-8 sequence), written out here from the rule rather than taken from the code.
std::string escaped_alone(unsigned char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\t':
      return "\\t";
    case '\r':
      return "\\r";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      break;
  }
  if (c >= 0x20 && c < 0x80) return std::string(1, static_cast<char>(c));
  static const char digits[] = "0123456789abcdef";
  return std::string("\\u00") + digits[c >> 4] + digits[c & 0xf];
}

// The writer copies a value or key into its piece while it checks it, eight bytes at a time
// where there are eight (the last eight overlapping), byte by byte below that, and leaves
// pieces longer than its buffer to json_quote: every byte value at every position of strings
// of every size across those paths, as a value and as a key, in both layouts.
TEST(ReportJsonWriter, WriterEscapesEveryByteAtEveryPositionOfEverySize) {
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string base;
  while (base.size() < 140) base += letters;
  for (std::size_t size : {1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 121, 122, 123, 124, 125, 140}) {
    for (std::size_t at = 0; at < size; ++at) {
      for (int c = 0; c < 256; ++c) {
        if (at != 0 && at != size - 1 && at % 7 != 3 && c % 5 != 0) continue;  // keep it quick
        std::string in = base.substr(0, size);
        in[at] = static_cast<char>(c);
        const std::string quoted = "\"" + base.substr(0, at) +
                                   escaped_alone(static_cast<unsigned char>(c)) +
                                   base.substr(at + 1, size - at - 1) + "\"";
        std::string out;
        JsonWriter w(out);
        w.begin_object(true).field(in, in).field("x", in).end_object();
        ASSERT_EQ(out, "{" + quoted + ": " + quoted + ", \"x\": " + quoted + "}")
            << "byte " << c << " at " << at << " of " << size;
        std::string compact;
        JsonWriter wc(compact, /*compact=*/true);
        wc.begin_array().value(in).value(in).end_array();
        ASSERT_EQ(compact, "[" + quoted + "," + quoted + "]")
            << "byte " << c << " at " << at << " of " << size;
      }
    }
  }
}

// Each kind of value after each kind in a one-line container, in an indented one and after a
// key: the separator written in front of each piece.
TEST(ReportJsonWriter, SeparatesEveryKindOfValue) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a").begin_array(true).value("s").address(uint64_t{16}).null().value(int64_t{-3});
  w.value(uint64_t{7}).value(true).value("").address(std::nullopt).end_array();
  w.key("b").begin_array().address(uint64_t{0}).value("t").null().value(int64_t{0}).end_array();
  w.address_field("c", uint64_t{0x7fffffffe000}).field("d", "").end_object();
  EXPECT_EQ(out,
            "{\n"
            "  \"a\": [\"s\", \"0x10\", null, -3, 7, true, \"\", null],\n"
            "  \"b\": [\n"
            "    \"0x0\",\n"
            "    \"t\",\n"
            "    null,\n"
            "    0\n"
            "  ],\n"
            "  \"c\": \"0x7fffffffe000\",\n"
            "  \"d\": \"\"\n"
            "}");
}

TEST(ReportJsonWriter, HexIsLowercaseWithPrefixAndNoPadding) {
  EXPECT_EQ(hex(0), "0x0");
  EXPECT_EQ(hex(0xABCDEF), "0xabcdef");
  EXPECT_EQ(hex(UINT64_MAX), "0xffffffffffffffff");
  // Every number of digits, and its boundaries.
  EXPECT_EQ(hex(0xf), "0xf");
  EXPECT_EQ(hex(0x10), "0x10");
  EXPECT_EQ(hex(0x8000000000000000), "0x8000000000000000");
  EXPECT_EQ(hex(0x123456789abcdef), "0x123456789abcdef");
  std::string digits = "1";
  for (uint64_t v = 1; v != 0; v <<= 4, digits += "0") EXPECT_EQ(hex(v), "0x" + digits);
  // Every digit value in every position, and many values, against printf.
  auto printed = [](uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(buf);
  };
  for (unsigned shift = 0; shift < 64; shift += 4) {
    for (uint64_t d = 0; d < 16; ++d) {
      EXPECT_EQ(hex(d << shift), printed(d << shift));
      EXPECT_EQ(hex(~(d << shift)), printed(~(d << shift)));
    }
  }
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const uint64_t v = x >> (i % 64);
    ASSERT_EQ(hex(v), printed(v)) << i;
  }
}

TEST(ReportJsonWriter, WritesNestedContainers) {
  std::string out;
  JsonWriter w(out);
  w.begin_object()
      .field("a", 1)
      .field("b", "x")
      .address_field("c", uint64_t{255})
      .address_field("d", std::nullopt);
  w.key("e").begin_array().value(true).value(false).null().end_array();
  w.key("f").begin_object().end_object();
  w.key("g").begin_array(true).value(int64_t{-1}).begin_object().field("h", 2).end_object();
  w.end_array();
  w.end_object();
  EXPECT_EQ(out,
            "{\n"
            "  \"a\": 1,\n"
            "  \"b\": \"x\",\n"
            "  \"c\": \"0xff\",\n"
            "  \"d\": null,\n"
            "  \"e\": [\n"
            "    true,\n"
            "    false,\n"
            "    null\n"
            "  ],\n"
            "  \"f\": {},\n"
            "  \"g\": [-1, {\"h\": 2}]\n"
            "}");
}

TEST(ReportJsonWriter, EscapesKeys) {
  std::string out;
  JsonWriter w(out);
  w.begin_object(true).field("k\"\n", uint64_t{18446744073709551615u}).end_object();
  EXPECT_EQ(out, R"({"k\"\n": 18446744073709551615})");
}

TEST(ReportJsonWriter, CompactIsOneLineWithoutSpaces) {
  // Python's json.dumps(doc, separators=(",", ":")) spelling of the same value.
  std::string out;
  JsonWriter w(out, /*compact=*/true);
  w.begin_object().field("a", 1).key("e").begin_array().value(true).null().end_array();
  w.key("f").begin_object().end_object();
  w.key("g").begin_array(true).value(int64_t{-1}).begin_object().field("h", "x").end_object();
  w.end_array();
  w.end_object();
  EXPECT_EQ(out, R"({"a":1,"e":[true,null],"f":{},"g":[-1,{"h":"x"}]})");
}

// What a JSON reader gets back for a string (report::document_string), against the escapes
// above: valid UTF-8 as it is, each byte of an invalid sequence as U+0080-U+00FF in UTF-8.
TEST(ReportDocumentString, ValidUtf8IsKept) {
  EXPECT_EQ(document_string(""), "");
  EXPECT_EQ(document_string("fx_level3"), "fx_level3");
  EXPECT_EQ(document_string("a\n\"\x01"), "a\n\"\x01");  // escaped in JSON, read back as is
  EXPECT_EQ(document_string("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
            "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");  // é € 😀
  EXPECT_EQ(document_string(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(ReportDocumentString, BytesThatAreNotUtf8BecomeLatin1CodePoints) {
  EXPECT_EQ(document_string("\xff"), "\xc3\xbf");              // U+00FF
  EXPECT_EQ(document_string("a\x80z"), "a\xc2\x80z");          // lone continuation byte
  EXPECT_EQ(document_string("\xc3"), "\xc3\x83");              // truncated at the end
  EXPECT_EQ(document_string("\xc3z"), "\xc3\x83z");            // truncated by an ASCII byte
  EXPECT_EQ(document_string("\xc0\xaf"), "\xc3\x80\xc2\xaf");  // overlong '/'
  EXPECT_EQ(document_string("\xed\xa0\x80"), "\xc3\xad\xc2\xa0\xc2\x80");  // surrogate
  EXPECT_EQ(document_string("\xf4\x90\x80\x80"),
            "\xc3\xb4\xc2\x90\xc2\x80\xc2\x80");  // above U+10FFFF
  // Valid sequences around an invalid byte stay as they are.
  EXPECT_EQ(document_string("\xc3\xa9\xff\xe2\x82\xac"), "\xc3\xa9\xc3\xbf\xe2\x82\xac");
}

}  // namespace
}  // namespace ehbt::report
