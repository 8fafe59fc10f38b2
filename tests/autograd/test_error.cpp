// Untrusted text in an error message (autograd/error.h: excerpt): bounded, control bytes and
// bytes that are no UTF-8 character escaped.
#include "autograd/error.h"

#include "tests/support/testing.h"

namespace sg {
namespace {

TEST(ErrorExcerpt, ControlBytesAreEscapedAndLongTextIsCut) {
  EXPECT_EQ(excerpt("tensor"), "tensor");
  EXPECT_EQ(excerpt(std::string("a\0b", 3)), "a\\x00b");      // a NUL no longer ends the message
  EXPECT_EQ(excerpt("\x1b[2J\x7f\t"), "\\x1b[2J\\x7f\\x09");  // no terminal control
  EXPECT_EQ(excerpt("caf\xc3\xa9"), "caf\xc3\xa9");           // UTF-8 text stays as it is
  // Bytes that are no UTF-8 character (a binary file's) are escaped; characters around them stay.
  EXPECT_EQ(excerpt("\xff\xfe caf\xc3\xa9 \xc3"), "\\xff\\xfe caf\xc3\xa9 \\xc3");
  EXPECT_EQ(excerpt(std::string(100, 'x')), fmt::format("{}... (100 bytes)", std::string(80, 'x')));
  EXPECT_EQ(excerpt("abcdef", 3), "abc... (6 bytes)");
  EXPECT_EQ(excerpt(""), "");
}

}  // namespace
}  // namespace sg
