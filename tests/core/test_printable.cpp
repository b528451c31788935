// printable(): what quotes user bytes in errors (every non-ASCII byte escaped) and in reports
// (Unicode kept, except what acts on a terminal or on the text's direction and lines).
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/printable.hpp"

namespace mpbench {
namespace {

TEST(Printable, ErrorsQuoteOnlyPrintableAscii) {
  EXPECT_EQ(printable("plain text ~!"), "plain text ~!");
  EXPECT_EQ(printable("a\nb\x1b[31m\x7f"), "a\\x0ab\\x1b[31m\\x7f");
  EXPECT_EQ(printable("\xc2\xb1 1%"), "\\xc2\\xb1 1%") << "non-ASCII too: an error line stays ASCII";
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
}

TEST(Printable, ReportsKeepUnicodeThatOnlyShows) {
  for (const std::string shown : {"\xc2\xb1", "Ryzen\xe2\x84\xa2", "\xc2\xa0", "\xf0\x9f\x98\x80", "\xe2\x80\xaf",
                                  "\xe2\x81\xa5", "\xe2\x81\xaa", "\xef\xbf\xbd"})
    EXPECT_EQ(printable(shown, Unicode::keep), shown) << printable(shown);
}

TEST(Printable, ReportsEscapeC0AndC1Controls) {
  EXPECT_EQ(printable("a\tb\r\n\x1b", Unicode::keep), "a\\x09b\\x0d\\x0a\\x1b");
  EXPECT_EQ(printable("\xc2\x80", Unicode::keep), "\\xc2\\x80") << "U+0080, the first C1 control";
  EXPECT_EQ(printable("\xc2\x9b" "31m", Unicode::keep), "\\xc2\\x9b31m") << "U+009B, CSI";
  EXPECT_EQ(printable("\xc2\x9f", Unicode::keep), "\\xc2\\x9f") << "U+009F, the last";
}

TEST(Printable, ReportsEscapeBidiControlsAndLineSeparators) {
  const struct {
    const char* utf8;
    const char* escaped;
  } controls[] = {
      {"\xd8\x9c", "\\xd8\\x9c"},          // U+061C arabic letter mark
      {"\xe2\x80\x8e", "\\xe2\\x80\\x8e"},  // U+200E left-to-right mark
      {"\xe2\x80\x8f", "\\xe2\\x80\\x8f"},  // U+200F right-to-left mark
      {"\xe2\x80\xa8", "\\xe2\\x80\\xa8"},  // U+2028 line separator
      {"\xe2\x80\xa9", "\\xe2\\x80\\xa9"},  // U+2029 paragraph separator
      {"\xe2\x80\xaa", "\\xe2\\x80\\xaa"},  // U+202A left-to-right embedding
      {"\xe2\x80\xae", "\\xe2\\x80\\xae"},  // U+202E right-to-left override
      {"\xe2\x81\xa6", "\\xe2\\x81\\xa6"},  // U+2066 left-to-right isolate
      {"\xe2\x81\xa9", "\\xe2\\x81\\xa9"},  // U+2069 pop directional isolate
  };
  for (const auto& c : controls) EXPECT_EQ(printable(std::string("x") + c.utf8 + "y", Unicode::keep),
                                           std::string("x") + c.escaped + "y");
}

TEST(Printable, ReportsEscapeMalformedUtf8ByteByByte) {
  EXPECT_EQ(printable("\xff", Unicode::keep), "\\xff");
  EXPECT_EQ(printable("\xe2\x80" "A", Unicode::keep), "\\xe2\\x80A") << "cut short";
  EXPECT_EQ(printable("\xc0\xaf", Unicode::keep), "\\xc0\\xaf") << "overlong '/'";
  EXPECT_EQ(printable("\xe0\x80\xaf", Unicode::keep), "\\xe0\\x80\\xaf") << "overlong, three bytes";
  EXPECT_EQ(printable("\xed\xa0\x80", Unicode::keep), "\\xed\\xa0\\x80") << "a surrogate";
  EXPECT_EQ(printable("\xf4\x90\x80\x80", Unicode::keep), "\\xf4\\x90\\x80\\x80") << "above U+10FFFF";
  EXPECT_EQ(printable("\xc2", Unicode::keep), "\\xc2") << "a lead byte at the end";
}

}  // namespace
}  // namespace mpbench
