// stored_zip against libaccel's own zip directory reader (the one torch.save
// archives are checked with) and byte for byte against what Python's zipfile
// writes for the same stored files dated 1980-01-01 (ZipInfo with
// date_time=(1980, 1, 1, 0, 0, 0), ZIP_STORED, create_system=0).
#include <gtest/gtest.h>

#include <string>

#include "formats/torch_archive.hpp"
#include "formats/zip_writer.hpp"

namespace {

TEST(ZipWriter, StoredFilesReadBackWithTheirSizes) {
  const std::string big(100000, 'x');
  const std::string zip = accel::detail::stored_zip({{"experiment.json", "{}"}, {"messages.json", big}, {"empty", ""}});
  const auto records = accel::detail::stored_records(accel::detail::StringArchiveBytes(zip), "test zip");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records.at("experiment.json"), 2u);
  EXPECT_EQ(records.at("messages.json"), big.size());
  EXPECT_EQ(records.at("empty"), 0u);
  EXPECT_NE(zip.find(big), std::string::npos) << "stored, not compressed";
}

TEST(ZipWriter, MatchesPythonsZipfileByteForByte) {
  // zipfile.ZipFile(f, "w").writestr(ZipInfo("a.txt", (1980, 1, 1, 0, 0, 0)) with create_system 0
  // and ZIP_STORED, b"hello"): its bytes, hex (the mode 0600 in the external attributes, as zipfile sets).
  const std::string zip = accel::detail::stored_zip({{"a.txt", "hello"}});
  static const char* const kPython =
      "504b03041400000000000000210086a61036050000000500000005000000612e74787468656c6c6f504b0102140014000000"
      "00000000210086a610360500000005000000050000000000000000000000800100000000612e747874504b05060000000001"
      "00010033000000280000000000";
  std::string hex;
  for (unsigned char c : zip) {
    static const char* digits = "0123456789abcdef";
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  EXPECT_EQ(hex, kPython);
}

}  // namespace
