// Aim's key, value and hash encodings against what aim 3.29's own functions
// return (aim.storage.hashing.hash_auto, aim.storage.encoding.encode_path and
// encode, in the venv of scripts/aim-python-env.sh), and BLAKE2b against RFC
// 7693's vector and Python's hashlib.blake2b with a digest size and salt.
#include <gtest/gtest.h>

#include <string>

#include "tracking/aim_encoding.hpp"
#include "tracking/blake2b.hpp"

namespace {

namespace aim = accel::detail::aim;
using accel::detail::Blake2b;

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string digest(const std::string& data, size_t size, const std::string& salt = "") {
  Blake2b state(size, salt);
  state.update(data);
  return hex(state.final());
}

TEST(AimEncoding, Blake2bMatchesTheRfcAndHashlib) {
  EXPECT_EQ(digest("abc", 64),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc95"
            "18d38aa8dbf1925ab92386edd4009923");  // RFC 7693, appendix A
  EXPECT_EQ(digest("abc", 8, "12345678"), "1cf55538f8479ccc");
  EXPECT_EQ(digest(std::string(300, 'x'), 20, "salt"), "540962d29e9b4ee05f623c46be4d2e3560d9004a");
  // Exactly two blocks: the last one is compressed as the final block.
  EXPECT_EQ(digest(std::string(256, 'y'), 64),
            "88fae5ed39dccbc801bee57a2bf4f1337e570b2c1a39f4062cfcf5dcb8e2b52fb4b794c857c030e78fa66e9b33568741"
            "488506f3ddaf5744ec1504d783b16fbf");
  EXPECT_THROW(Blake2b(65), std::exception);
  EXPECT_THROW(Blake2b(8, std::string(17, 's')), std::exception);
}

TEST(AimEncoding, HashesAreAims) {
  EXPECT_EQ(aim::hash_number(0), 487590686800389010LL);
  EXPECT_EQ(aim::hash_number(1), 6813614137041369426LL);
  EXPECT_EQ(aim::hash_number(2.5), 3278360821711337585LL);
  EXPECT_EQ(aim::hash_number(-1), -2031535777419256979LL);
  EXPECT_EQ(aim::hash_number(-3.75), -4920257195056866218LL);
  EXPECT_EQ(aim::hash_number(1e300), -8526786551268721049LL);
  EXPECT_EQ(aim::hash_number(1099511627779.0), 805309613461550777LL);
  EXPECT_EQ(aim::hash_number(1.0 / 0.0), 3372801684980267467LL);
  EXPECT_EQ(aim::hash_string("a"), -7370611057014097113LL);
  EXPECT_EQ(aim::hash_string(""), 6849049062142317862LL);
  EXPECT_EQ(aim::hash_string("train/loss"), -6438136923596692504LL);
  EXPECT_EQ(aim::hash_string("\xc3\xa9t\xc3\xa9"), -3019241442869788661LL);
  EXPECT_EQ(aim::hash_string_dict({}), -4504863053055089774LL);
  EXPECT_EQ(aim::hash_string_dict({{"subset", "train"}}), -8686149688933388395LL);
  EXPECT_EQ(aim::hash_string_dict({{"subset", "train"}, {"fold", "2"}}), -2071910629456811560LL);
  EXPECT_EQ(aim::hash_string_dict({{"fold", "2"}, {"subset", "train"}}), -2071910629456811560LL) << "order-free";
}

TEST(AimEncoding, PathsAndValuesAreAims) {
  EXPECT_EQ(aim::encode_path({std::string("meta"), std::string("chunks"), std::string("ab12"),
                              aim::hash_string_dict({}), std::string("loss")}),
            std::string("meta\xfe"
                        "chunks\xfe"
                        "ab12\xfe\xfe\xc1{\x82\xeb\xc8\xde\xa3\x92\xfe"
                        "loss\xfe"));
  EXPECT_EQ(aim::encode_float(2.5), std::string("\x03\x00\x00\x00\x00\x00\x00\x04@", 9));
  EXPECT_EQ(aim::encode_int(-3), std::string("\x02\xfd\xff\xff\xff\xff\xff\xff\xff", 9));
  EXPECT_EQ(aim::encode_none(), std::string("\x00", 1));
  EXPECT_EQ(aim::encode_string("h\xc3\xa9"), std::string("\x04h\xc3\xa9"));
}

}  // namespace
